#!/usr/bin/env node
// A tiny MCP server over stdio that misbehaves on request, for Skein's fault
// tests. It speaks newline-delimited JSON-RPC by hand, with no dependencies.
//
// Tools:
//   echo     answers {"text": "echo: <message>"}
//   exit     writes to stderr and exits with status 3 instead of answering
//   hang     never answers (the server stays responsive to other requests)
//   spin     never answers and blocks the whole process (busy loop)
//   fail     answers with isError: true
//   rpcerror answers with a JSON-RPC error
//   garbage  writes a line that is not JSON to stdout
//   route    answers JSON text carrying a _route directive
//   orphan   starts a child that keeps stdout open, then exits with status 3
//            instead of answering
//
// Flags:
//   --ignore-stdin-close  keep running when stdin closes
//   --exit-at-start       exit with status 2 before reading anything
//   --hang-at-start       read every request and answer none (a server
//                         stuck in its handshake)
"use strict";

const args = process.argv.slice(2);
const ignoreClose = args.includes("--ignore-stdin-close");

if (args.includes("--exit-at-start")) {
  process.stderr.write("faulty: refusing to start\n");
  process.exit(2);
}

const tools = ["echo", "exit", "hang", "spin", "fail", "rpcerror", "garbage", "route", "orphan"].map((name) => ({
  name,
  description: "faulty " + name,
  inputSchema:
    name === "echo"
      ? { type: "object", properties: { message: { type: "string" } }, required: ["message"] }
      : { type: "object", properties: {} },
}));

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + "\n");
}

function reply(id, result) {
  send({ jsonrpc: "2.0", id, result });
}

function text(t, isError) {
  return { content: [{ type: "text", text: t }], isError: !!isError };
}

const hangAtStart = args.includes("--hang-at-start");

function handle(msg) {
  if (msg.id === undefined || hangAtStart) return; // a notification, or stuck
  switch (msg.method) {
    case "initialize":
      return reply(msg.id, {
        protocolVersion: msg.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "faulty", version: "1.0.0" },
      });
    case "ping":
      return reply(msg.id, {});
    case "tools/list":
      return reply(msg.id, { tools });
    case "tools/call":
      break;
    default:
      return send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "method not found: " + msg.method } });
  }
  const a = msg.params.arguments || {};
  switch (msg.params.name) {
    case "echo":
      return reply(msg.id, text("echo: " + a.message));
    case "exit":
      process.stderr.write("faulty: exiting in the middle of a call\n");
      process.exit(3);
      return;
    case "hang":
      return;
    case "spin":
      for (;;) {}
    case "fail":
      return reply(msg.id, text("the tool failed on purpose", true));
    case "rpcerror":
      return send({ jsonrpc: "2.0", id: msg.id, error: { code: -32000, message: "boom from faulty" } });
    case "garbage":
      process.stdout.write("this is not JSON\n");
      return;
    case "route":
      return reply(msg.id, text(JSON.stringify({ _route: "b", n: 1 })));
    case "orphan":
      require("child_process").spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: ["ignore", "inherit", "inherit"] });
      process.stderr.write("faulty: exiting, my child keeps stdout\n");
      process.exit(3);
      return;
  }
}

let buf = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buf += chunk;
  let i;
  while ((i = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, i).trim();
    buf = buf.slice(i + 1);
    if (line) handle(JSON.parse(line));
  }
});
process.stdin.on("end", () => {
  if (ignoreClose) {
    process.stderr.write("faulty: stdin closed, staying up\n");
    setInterval(() => {}, 1000);
    return;
  }
  process.exit(0);
});
process.stderr.write("faulty: ready\n");
