import * as React from 'react';

import { IProfile } from './model';

/**
 * The SSH profile picker the Sync and Port forwards sections share: one option per profile. The other
 * props (the id and aria attributes a `Field` gives its control) go to the <select>.
 */
export function ProfileSelect(
  props: {
    profiles: IProfile[];
    value: string;
    onChange: (name: string) => void;
  } & Omit<React.SelectHTMLAttributes<HTMLSelectElement>, 'onChange'>
): JSX.Element {
  const { profiles, onChange, ...rest } = props;
  return (
    <select
      {...rest}
      className="jp-mod-styled"
      onChange={e => onChange(e.target.value)}
    >
      {profiles.map(p => (
        <option key={p.name} value={p.name}>
          {p.name}
        </option>
      ))}
    </select>
  );
}
