import * as React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';

import { Field } from '../ui/common';
import { ProfileSelect } from './profileselect';

const profiles = [
  { name: 'box', host: 'localhost' },
  { name: 'nb', host: '127.0.0.1' }
];

describe('ProfileSelect', () => {
  it('takes the id and aria attributes of its Field, so the label and tests find the <select>', () => {
    const html = renderToStaticMarkup(
      <Field name="sync-profile" label="Profile" message="no such profile">
        <ProfileSelect profiles={profiles} value="nb" onChange={() => {}} />
      </Field>
    );
    expect(html).toContain('<select id="jp-Ranktable-field-sync-profile"');
    expect(html).toContain(
      'aria-describedby="jp-Ranktable-field-sync-profile-msg"'
    );
    expect(html).toContain('<option value="nb" selected="">nb</option>');
  });
});
