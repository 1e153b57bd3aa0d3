/**
 * A hosted JupyterLab (#30): under `--ServerApp.base_url=/notebook/abc123/`, behind a reverse proxy that
 * refuses WebSocket upgrades while REST goes through (`hosted_stack.py`). The Jobs section says the live
 * updates are unavailable and why, and lists the running job by polling; once the proxy passes
 * websockets the stream opens, the notice goes and the list is live. Debian chromium at 1440x900.
 */
import { expect, test as base } from '@jupyterlab/galata';

import { hostedStack, openSidebar, WORKSPACE_PAGE } from './fixtures';
import type { IHostedStack } from './fixtures';

const test = base.extend<object, { hosted: IHostedStack }>({
  hosted: hostedStack(),
  baseURL: async ({ hosted }, use) => use(hosted.url)
});

test.use({ autoGoto: false, ...WORKSPACE_PAGE });

test('behind a proxy without websockets the Jobs section polls and says so, then goes live', async ({
  page,
  hosted,
  request
}) => {
  test.setTimeout(180 * 1000);
  const streams: string[] = [];
  page.on('websocket', ws => streams.push(ws.url()));
  await page.goto();
  const panel = await openSidebar(page);
  const notice = panel.locator('[data-notice="polling"]');
  await expect(notice).toBeVisible({ timeout: 60 * 1000 });
  await expect(notice).toContainText('Live updates unavailable');
  await expect(notice).toContainText('WebSocket upgrades');
  // REST through the proxy (under the base_url) still lists the job
  await expect(
    panel.locator('.jp-Ranktable-jobRow[data-job="hosted-job"]')
  ).toBeVisible();
  await expect(
    panel.locator('[data-section="jobs"] .jp-Ranktable-empty')
  ).toHaveCount(0);

  // a Job view's live log cannot stream yet: it says why
  await panel.locator('.jp-Ranktable-jobRow[data-job="hosted-job"]').click();
  const view = page.locator('.jp-Ranktable-jobView');
  await expect(view).toContainText('Live logs need the websocket');

  const switched = await request.post(hosted.control, { data: 'allow' });
  expect(await switched.json()).toEqual({ websockets: true });
  // the stream's back-off retry (at most 10 s) opens the socket: the notice goes, the list is live
  await expect(notice).toHaveCount(0, { timeout: 60 * 1000 });
  await expect(
    panel.locator('.jp-Ranktable-jobRow[data-job="hosted-job"]')
  ).toBeVisible();
  await expect(view.locator('.jp-Ranktable-logLine').first()).toContainText(
    'hosted step 1',
    { timeout: 60 * 1000 }
  );
  await expect(view).not.toContainText('Live logs need the websocket');
  expect(
    streams.some(u => u.includes('/notebook/abc123/ranktable/stream'))
  ).toBe(true);
});
