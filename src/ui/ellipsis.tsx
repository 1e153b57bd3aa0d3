import * as React from 'react';

/** `text` cut in two: what may be clipped (with "…") and the end that always shows (file name, port). */
export function middleSplit(text: string, tail = 14): [string, string] {
  if (text.length <= tail + 3) {
    return [text, ''];
  }
  return [text.slice(0, text.length - tail), text.slice(-tail)];
}

/**
 * A long name or path ellipsised in the middle (`sim-notebook:~/.local/…/shared/project`), whole in its
 * tooltip; it never wraps, so `ma-user@127.0.0.1:39893` does not break at the hyphen.
 */
export function MiddleEllipsis(props: {
  text: string;
  tail?: number;
  className?: string;
}): JSX.Element {
  const [head, end] = middleSplit(props.text, props.tail);
  return (
    <span
      className={'jp-Ranktable-midEllipsis ' + (props.className ?? '')}
      title={props.text}
    >
      <span className="jp-Ranktable-midEllipsis-head">{head}</span>
      {end && <span className="jp-Ranktable-midEllipsis-tail">{end}</span>}
    </span>
  );
}
