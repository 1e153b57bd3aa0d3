/**
 * JupyterHub in Chromium at 1440x900 (#30): carol, whom docs/teams.md's Hub config gives read-only
 * scopes on alice's server, logs in and opens alice's JupyterLab (`hub_stack.py`). She sees alice's job,
 * the SSH profile and Job view's write buttons (Add profile, Stop, Resubmit) are disabled with the reason.
 */
import { expect, test as base } from '@jupyterlab/galata';

import { withStack } from './fixtures';

const test = base.extend<object, { hub: string }>({
  hub: [
    async ({}, use) => {
      await withStack<{ hub: string }>('hub_stack.py', served =>
        use(served.hub)
      );
    },
    { scope: 'worker', timeout: 300 * 1000 }
  ]
});

test('a read-only viewer of a colleague’s server sees the job and may not stop it', async ({
  browser,
  hub
}) => {
  test.setTimeout(120 * 1000);
  const context = await browser.newContext({
    viewport: { width: 1440, height: 900 }
  });
  const page = await context.newPage();
  await page.goto(`${hub}/hub/login`);
  await page.locator('#username_input').fill('carol');
  await page.locator('#password_input').fill('any');
  await page.locator('#login_submit').click();
  await page.waitForURL(/\/hub\//);
  await page.goto(`${hub}/user/alice/lab`);
  // the Hub asks carol once to let alice's server identify her (its read scope shown)
  await page.getByRole('button', { name: 'Authorize' }).click();
  const tab = page.locator('.jp-SideBar [data-id="jp-ranktable-panel"]');
  await tab.click({ timeout: 60 * 1000 });
  const panel = page.locator('#jp-ranktable-panel');
  const row = panel.locator('.jp-Ranktable-jobRow[data-job="bert"]');
  await expect(row).toBeVisible({ timeout: 30 * 1000 });
  await expect(row).toHaveAttribute('data-owner', 'alice');
  // the team's jobs, unfolded under Jobs: alice's job with its owner
  await panel.locator('.jp-Ranktable-team summary').click();
  await expect(
    panel.locator('.jp-Ranktable-teamJobs tr[data-job="bert"] td').nth(1)
  ).toHaveText('alice');
  const add = panel.getByRole('button', { name: 'Add profile…' });
  await expect(add).toBeDisabled();
  await expect(add).toHaveAttribute('title', /^Read-only: /);
  await row.click();
  const header = page.locator('.jp-Ranktable-jobHeader');
  const stop = header.getByRole('button', { name: 'Stop' });
  await expect(stop).toBeDisabled();
  await expect(stop).toHaveAttribute('title', /^Read-only: /);
  await expect(header.getByRole('button', { name: 'Resubmit' })).toBeDisabled();
  await context.close();
});
