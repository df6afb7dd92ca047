#!/usr/bin/env node
// A tiny MCP server over stdio with one tool, shot, that returns an image:
// the node that calls it saves the image as an artifact. Newline-delimited
// JSON-RPC by hand, with no dependencies.
"use strict";

// A 1×1 PNG, then padding chunks so that the file is not tiny.
const png = Buffer.concat([
  Buffer.from(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
    "base64",
  ),
  Buffer.alloc(100000, 0x2a),
]);

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + "\n");
}

function handle(msg) {
  if (msg.id === undefined) return; // a notification
  const reply = (result) => send({ jsonrpc: "2.0", id: msg.id, result });
  switch (msg.method) {
    case "initialize":
      return reply({
        protocolVersion: msg.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "picture", version: "1.0.0" },
      });
    case "ping":
      return reply({});
    case "tools/list":
      return reply({ tools: [{ name: "shot", description: "Takes a picture.", inputSchema: { type: "object", properties: {} } }] });
    case "tools/call":
      return reply({
        content: [
          { type: "text", text: "took a picture" },
          { type: "image", data: png.toString("base64"), mimeType: "image/png" },
        ],
      });
    default:
      return send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "no method " + msg.method } });
  }
}

let buf = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buf += chunk;
  let i;
  while ((i = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    if (line.trim()) handle(JSON.parse(line));
  }
});
process.stdin.on("end", () => process.exit(0));
