// The run viewer of skein serve: sign in with an API token, then the
// runs, one run, the workflows and a chat, routed by the URL's hash.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api, onUnauthorized, setCSRF } from "./api.js";
import { ChatPage } from "./chat.jsx";
import { EditorPage } from "./editor.jsx";
import { RunPage } from "./run.jsx";
import { RunsPage } from "./runs.jsx";
import { WorkflowPage, WorkflowsPage } from "./workflows.jsx";
import "./app.css";

function useHash() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash;
}

function SignIn({ onSignedIn }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState("");
  const submit = async (e) => {
    e.preventDefault();
    try {
      const s = await api("POST", "/api/session", { token });
      setToken("");
      onSignedIn(s);
    } catch (x) {
      setError(x.status === 401 ? "That token is not valid." : x.message);
    }
  };
  return (
    <main id="main" class="signin">
      <h1>Skein</h1>
      <form onSubmit={submit} aria-labelledby="signin-h">
        <h2 id="signin-h">Sign in</h2>
        <p>
          Paste an API token: <code>.skein/admin.token</code>, or one made by <code>skein token create</code>.
        </p>
        <label for="token">API token</label>
        <input id="token" name="token" type="password" autocomplete="off" value={token} onInput={(e) => setToken(e.currentTarget.value)} required />
        <button type="submit" class="primary">
          Sign in
        </button>
        {error ? (
          <p role="alert" class="error">
            {error}
          </p>
        ) : null}
      </form>
    </main>
  );
}

function route(hash) {
  const [path, qs] = hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, query: new URLSearchParams(qs || "") };
}

function App() {
  const [session, setSession] = useState(undefined);
  const hash = useHash();
  useEffect(() => {
    onUnauthorized(() => setSession(null));
    api("GET", "/api/session").then(
      (s) => {
        setCSRF(s.csrf);
        setSession(s);
      },
      () => setSession(null),
    );
  }, []);
  if (session === undefined) return <main id="main" aria-busy="true"></main>;
  if (session === null)
    return (
      <SignIn
        onSignedIn={(s) => {
          setCSRF(s.csrf);
          setSession(s);
        }}
      />
    );
  const signOut = async () => {
    await api("DELETE", "/api/session").catch(() => {});
    setCSRF("");
    setSession(null);
  };
  const { parts, query } = route(hash);
  // Each page is keyed by what it shows: another run, workflow or query
  // is a new page, not the last one's state under a new name.
  let page;
  let section = "runs";
  if (parts[0] === "runs" && parts[1]) page = <RunPage key={`run/${parts[1]}`} id={parts[1]} session={session} />;
  else if (parts[0] === "workflows" && parts[1] && parts[2] === "edit") {
    section = "workflows";
    page = <EditorPage key={`edit/${parts[1]}`} name={parts[1]} session={session} />;
  } else if (parts[0] === "workflows" && parts[1]) {
    section = "workflows";
    page = <WorkflowPage key={`workflow/${parts[1]}`} name={parts[1]} session={session} />;
  } else if (parts[0] === "workflows") {
    section = "workflows";
    page = <WorkflowsPage session={session} />;
  } else if (parts[0] === "chat" && parts[1]) {
    section = "workflows";
    page = <ChatPage key={`chat/${parts[1]}`} name={parts[1]} />;
  } else page = <RunsPage key={`runs?${query.toString()}`} query={query} />;
  return (
    <>
      <a href="#main" class="skip" onClick={(e) => (e.preventDefault(), document.getElementById("main").focus())}>
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Skein</span>
        <nav aria-label="Main">
          <a href="#/" aria-current={section === "runs" ? "page" : undefined}>
            Runs
          </a>
          <a href="#/workflows" aria-current={section === "workflows" ? "page" : undefined}>
            Workflows
          </a>
        </nav>
        <span class="who">
          scope {session.scope}
          {session.auth ? (
            <button type="button" class="link" onClick={signOut}>
              Sign out
            </button>
          ) : null}
        </span>
      </header>
      <main id="main" tabindex="-1">
        {page}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app"));
