/**
 * Logs from anywhere in the browser (#25): a folder of log files in the Jupyter root (a download, a
 * colleague's files) opened with "Open logs as a run" from the file browser's context menu is read by the
 * server as one run (`POST /ranktable/logs`) and shown as a Job view's Metrics tab is, at 1440x900: the
 * first failing rank with its code, the first error per rank, and the loss plot. No job is submitted.
 */
import { expect, test } from '@jupyterlab/galata';

import { WORKSPACE_PAGE } from './fixtures';

test.use({ autoGoto: true, ...WORKSPACE_PAGE });

/** rank `r`'s log: three steps, then rank 2 runs out of NPU memory and the others time out later. */
function rankLog(r: number): string {
  const steps = [1, 2, 3].map(
    s =>
      `2026-01-01T00:00:0${s}.000000000Z step ${s} loss ${(3 - 0.1 * s).toFixed(1)}`
  );
  const last =
    r === 2
      ? '2026-01-01T00:00:04.000000000Z RuntimeError: NPU out of memory. Tried to allocate 2 GiB'
      : `2026-01-01T00:01:04.000000000Z [Rank ${r}] Watchdog caught collective operation timeout`;
  return [...steps, last].join('\n') + '\n';
}

test('a folder of logs opens as a run: first failure, errors per rank, loss plot', async ({
  page,
  tmpPath
}) => {
  for (const r of [0, 1, 2, 3]) {
    await page.contents.uploadContent(
      rankLog(r),
      'text',
      `${tmpPath}/export/worker_${r}.log`
    );
  }
  await page.filebrowser.openDirectory(tmpPath);
  const folder = page.locator('.jp-DirListing-item', { hasText: 'export' });
  await folder.click();
  await folder.click({ button: 'right' });
  await page
    .locator('.lm-Menu-itemLabel', { hasText: 'Open logs as a run' })
    .click();

  const doc = page.locator('.jp-ranktable-logsrun');
  await expect(doc).toBeVisible({ timeout: 30000 });
  await expect(
    page.locator('.lm-TabBar-tabLabel', { hasText: 'Logs:' })
  ).toBeVisible();
  const first = doc.locator('.jp-ranktable-first-failure');
  await expect(first).toContainText('First failure: rank 2');
  await expect(first).toContainText('DEVICE_OOM');
  await expect(first).toContainText('worker_2.log');
  await expect(
    doc.locator('.jp-ranktable-logsrun-files summary')
  ).toContainText('4 log file(s)');
  await doc.locator('summary', { hasText: 'First error per rank (4)' }).click();
  await expect(doc.locator('.jp-ranktable-errors tbody tr')).toHaveCount(4);
  await expect(
    doc.locator('.jp-ranktable-chart svg polyline').first()
  ).toBeVisible();
  await expect(doc.locator('.jp-ranktable-metrics-bar')).toContainText(
    '4 rank(s) · log files'
  );
});
