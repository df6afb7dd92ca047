// A JSON value as a tree: objects and arrays fold (native <details>, so
// the keyboard opens and closes them), scalars are shown as JSON.

function scalar(v) {
  if (v === null) return <span class="j-null">null</span>;
  switch (typeof v) {
    case "string":
      return <span class="j-str">{JSON.stringify(v)}</span>;
    case "number":
      return <span class="j-num">{String(v)}</span>;
    case "boolean":
      return <span class="j-bool">{String(v)}</span>;
    default:
      return <span>{String(v)}</span>;
  }
}

// blobRef is the reference object of a big value the run keeps out of
// its document ({"$skein.blob": {sha256, size, type, …}}), or null.
function blobRef(v) {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return null;
  const keys = Object.keys(v);
  const r = keys.length === 1 && keys[0] === "$skein.blob" ? v["$skein.blob"] : null;
  return r && typeof r.sha256 === "string" ? r : null;
}

function Entry({ name, value, depth, runID }) {
  const label = name == null ? null : <span class="j-key">{name}: </span>;
  const blob = runID ? blobRef(value) : null;
  if (blob) {
    // A big value: the API reads it (GET /api/runs/{id}/blobs/{sha256}).
    const what = blob.type === "json" ? "JSON" : "text";
    return (
      <div class="j-row">
        {label}
        <a class="j-blob" href={`/api/runs/${encodeURIComponent(runID)}/blobs/${encodeURIComponent(blob.sha256)}`} target="_blank" rel="noopener">
          {what} of {Number(blob.size).toLocaleString("en-US")} bytes: open
        </a>
      </div>
    );
  }
  if (value === null || typeof value !== "object") {
    return (
      <div class="j-row">
        {label}
        {scalar(value)}
      </div>
    );
  }
  const isArr = Array.isArray(value);
  const keys = isArr ? value.map((_, i) => i) : Object.keys(value);
  const summary = isArr ? `[${keys.length}]` : `{${keys.length}}`;
  if (keys.length === 0) {
    return (
      <div class="j-row">
        {label}
        <span class="j-punct">{isArr ? "[]" : "{}"}</span>
      </div>
    );
  }
  return (
    <details class="j-node" open={depth < 2}>
      <summary>
        {label}
        <span class="j-punct">{summary}</span>
      </summary>
      <div class="j-children">
        {keys.map((k) => (
          <Entry key={k} name={k} value={value[k]} depth={depth + 1} runID={runID} />
        ))}
      </div>
    </details>
  );
}

// JsonTree shows value; given the run it belongs to (runID), a big value's
// reference is a link that opens the value.
export function JsonTree({ value, label, runID }) {
  return (
    <div class="json" aria-label={label}>
      <Entry value={value} depth={0} runID={runID} />
    </div>
  );
}
