// The text of a field that shows a value of the draft.
import { useEffect, useRef, useState } from "preact/hooks";

// useFieldText is the text of a field showing a draft's value (shown),
// set back to it when key — what the value is of, and the value — changes,
// and not after the field's first drawing: an effect runs after the
// browser paints, and what was typed meanwhile would be lost.
export function useFieldText(shown, key) {
  const [text, setText] = useState(shown);
  const last = useRef(key);
  useEffect(() => {
    if (last.current === key) return;
    last.current = key;
    setText(shown);
  }, [key]);
  return [text, setText];
}
