import * as React from 'react';

import { PermissionsModel } from './model';

/** The user's rights for every sidebar section (the Jobs model's `permissions`). */
export const RightsContext = React.createContext<PermissionsModel | null>(null);

/**
 * Why this user may not `write` (or `execute`) on this Jupyter server, '' when they may or it is not
 * known: a button passes it to `disabled` and `title`. Re-renders when the rights are read.
 */
export function useWhyNot(action: 'write' | 'execute'): string {
  const rights = React.useContext(RightsContext);
  const [, tick] = React.useState(0);
  React.useEffect(() => {
    if (!rights) {
      return;
    }
    const f = () => tick(t => t + 1);
    rights.changed.connect(f);
    return () => {
      rights.changed.disconnect(f);
    };
  }, [rights]);
  return rights ? rights.whyNotHere(action) : '';
}

/**
 * A button that writes on this server: disabled while the user may not (`whyNot`, from `useWhyNot`) or
 * while `busy`, with the reason as its tooltip.
 */
export function WriteButton(props: {
  className: string;
  whyNot: string;
  busy?: boolean;
  onClick: () => void;
  children: React.ReactNode;
}): JSX.Element {
  return (
    <button
      className={props.className}
      disabled={!!props.busy || !!props.whyNot}
      title={props.whyNot || undefined}
      onClick={props.onClick}
    >
      {props.children}
    </button>
  );
}
