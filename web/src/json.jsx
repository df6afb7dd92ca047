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

function Entry({ name, value, depth }) {
  const label = name == null ? null : <span class="j-key">{name}: </span>;
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
          <Entry key={k} name={k} value={value[k]} depth={depth + 1} />
        ))}
      </div>
    </details>
  );
}

export function JsonTree({ value, label }) {
  return (
    <div class="json" aria-label={label}>
      <Entry value={value} depth={0} />
    </div>
  );
}
