import * as React from 'react';

import { IProfile } from './model';

/** The SSH profile picker the Sync and Port forwards sections share: one option per profile. */
export function ProfileSelect(props: {
  profiles: IProfile[];
  value: string;
  onChange: (name: string) => void;
}): JSX.Element {
  return (
    <select
      className="jp-mod-styled"
      value={props.value}
      onChange={e => props.onChange(e.target.value)}
    >
      {props.profiles.map(p => (
        <option key={p.name} value={p.name}>
          {p.name}
        </option>
      ))}
    </select>
  );
}
