/**
 * Every main-area document opens from the launcher (category Ranktable) at 1440x900: the Job view
 * through a dialog listing the pool's runs (earlier runs of a same-name job included, and a clear
 * empty state), the Rank layout viewer through a file dialog over the Jupyter contents; and the Job
 * view from a job row's context menu in the sidebar.
 */
import { expect, test } from '@jupyterlab/galata';
import type { IJupyterLabPageFixture } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

import {
  LOOP,
  WORKSPACE_PAGE,
  openSidebar,
  shoot,
  stopAll,
  stopAndWait,
  submit,
  testTopology,
  zigzagRankTable
} from './fixtures';

test.use({ autoGoto: true, ...WORKSPACE_PAGE });
test.describe.configure({ mode: 'serial' });
// a failed test leaves no job running: later specs (the sidebar's pictures) would show it
test.afterEach(async ({ request }) => stopAll(request));

/** A Ranktable card of a freshly opened launcher. */
async function launcherCard(
  page: IJupyterLabPageFixture,
  label: string
): Promise<Locator> {
  await page.evaluate(async () => {
    await window.jupyterapp.commands.execute('launcher:create');
  });
  const section = page.locator('.jp-Launcher-section:visible').filter({
    has: page.locator('.jp-Launcher-sectionTitle', { hasText: 'Ranktable' })
  });
  const card = section.locator('.jp-LauncherCard', {
    has: page.locator('.jp-LauncherCard-label', { hasText: label })
  });
  await expect(card).toBeVisible();
  return card;
}

test('launcher → Job view with no jobs: the dialog says so (and says when the pool is unreachable)', async ({
  page,
  request
}) => {
  // the empty state shows only when the pool has no job
  await stopAll(request);
  await (await launcherCard(page, 'Job view')).click();
  const dialog = page.locator('.jp-Ranktable-runPickerDialog');
  await expect(dialog.locator('.jp-Dialog-header')).toHaveText(
    'Open a Job view'
  );
  const empty = dialog.locator('.jp-Ranktable-pickEmpty');
  await expect(empty).toContainText('No jobs on the pool.');
  await expect(dialog.locator('.jp-Ranktable-pickRow')).toHaveCount(0);
  // nothing to open: Open is disabled, Cancel closes
  await expect(
    dialog.locator('.jp-Dialog-button.jp-mod-accept')
  ).toBeDisabled();
  await page.screenshot({
    path: test.info().outputPath('launcher-job-empty.png')
  });

  // the server answers the job list with an error (as when the cluster is down): the reason is shown
  const jobsList = (url: URL) => url.pathname.endsWith('/ranktable/jobs');
  await page.route(jobsList, route =>
    route.fulfill({
      status: 503,
      contentType: 'application/json',
      body: JSON.stringify({
        message: 'cluster unreachable: connection refused',
        reason: 'unreachable',
        field: null
      })
    })
  );
  await empty.getByRole('button', { name: 'Reload' }).click();
  await expect(empty).toContainText('The pool is unreachable.');
  await expect(empty).toContainText('connection refused');
  await page.unroute(jobsList);
  await empty.getByRole('button', { name: 'Reload' }).click();
  await expect(empty).toContainText('No jobs on the pool.');
  await dialog.locator('.jp-Dialog-button.jp-mod-reject').click();
  await expect(dialog).toHaveCount(0);
});

test('launcher → Job view: pick a job, or an earlier run of the same name, and its Job view opens', async ({
  page,
  request
}) => {
  test.setTimeout(300 * 1000);
  const first = await submit(request, 'pick-job', LOOP('pick-first'), 1);
  const panel = await openSidebar(page);
  const firstRow = panel.locator(
    `.jp-Ranktable-jobRow[data-uid="${first.uid}"]`
  );
  await expect(firstRow).toBeVisible({ timeout: 60000 });
  // the sidebar row's context menu opens the run's Job view; its overview has the server observe the run
  await firstRow.click({ button: 'right' });
  await page.locator('.lm-Menu-item', { hasText: /^Open Job view$/ }).click();
  const view1 = page.locator(`#ranktable-job-${first.uid}`);
  await expect(view1).toBeVisible();
  await view1.getByRole('tab', { name: 'Overview' }).click();
  await expect(view1.locator('.jp-Ranktable-pods tbody tr')).toHaveCount(1, {
    timeout: 60000
  });
  await view1.getByRole('tab', { name: 'Logs' }).click();
  await expect(view1.locator('.jp-Ranktable-logLine').first()).toContainText(
    'pick-first',
    { timeout: 120000 }
  );
  // the server's follower (started by the overview) has archived some of the run's lines
  await expect
    .poll(
      async () => {
        const listed = await (
          await request.get('/ranktable/jobs/default/pick-job/runs')
        ).json();
        const run = (listed.runs ?? []).find(
          (r: { uid: string }) => r.uid === first.uid
        );
        return run?.bytes ?? 0;
      },
      { timeout: 60000 }
    )
    .toBeGreaterThan(0);
  await page
    .locator(`li.lm-TabBar-tab[data-id="ranktable-job-${first.uid}"]`)
    .locator('.lm-TabBar-tabCloseIcon')
    .click();
  await expect(view1).toHaveCount(0);

  // stopped and submitted again under the same name: a new run; the first stays selectable
  await stopAndWait(request, 'pick-job');
  const second = await submit(request, 'pick-job', LOOP('pick-second'), 1);
  expect(second.uid).not.toBe(first.uid);
  await expect(
    panel.locator(`.jp-Ranktable-jobRow[data-uid="${second.uid}"]`)
  ).toBeVisible({ timeout: 60000 });

  await (await launcherCard(page, 'Job view')).click();
  const dialog = page.locator('.jp-Ranktable-runPickerDialog');
  const row = dialog.locator('.jp-Ranktable-pickRow[data-job="pick-job"]');
  await expect(row).toBeVisible();
  await expect(row).toContainText('pick-job');
  await expect(row).toContainText(/Pending|Running/);
  await expect(row).toContainText(/\d+ s ago|\d+ min ago/);
  // the Run menu: the current run first, then the earlier one
  const runs = row.getByLabel('Run of pick-job');
  await expect(runs.locator('option')).toHaveCount(2);
  await expect(runs.locator('option').first()).toHaveText(
    `${second.uid.slice(0, 8)} · current`
  );
  // the stopped run is listed with its final phase (#24.4), not the "Running" last seen
  await expect(runs.locator('option').nth(1)).toContainText(
    `${first.uid.slice(0, 8)} · Stopped ·`
  );
  await runs.selectOption(first.uid);
  await expect(row).toContainText('(earlier)');
  await expect(row).toContainText('Stopped');
  await page.screenshot({
    path: test.info().outputPath('launcher-job-dialog.png')
  });
  await shoot(page, 'launcher-job-picker');
  await dialog.locator('.jp-Dialog-button.jp-mod-accept').click();
  const old = page.locator(`#ranktable-job-${first.uid}`);
  await expect(old).toBeVisible();
  await expect(old.locator('.jp-Ranktable-jobHeader')).toContainText(
    `run ${first.uid.slice(0, 8)}`
  );
  await expect(old.locator('.jp-Ranktable-notice')).toContainText(
    'This run has ended',
    { timeout: 30000 }
  );
  // opened after it ended: the header says its final phase, not one it no longer has
  await expect(
    old.locator('.jp-Ranktable-jobHeader .jp-Ranktable-phase')
  ).toHaveText('Stopped');
  // its own lines, read from the server's run archive
  await expect(old.locator('.jp-Ranktable-logLine').first()).toContainText(
    'pick-first',
    { timeout: 30000 }
  );
  await expect(old.locator('.jp-Ranktable-logView')).not.toContainText(
    'pick-second'
  );
  await expect(old.locator('.jp-Ranktable-logStatus')).toContainText(
    'archived'
  );
  // an ended run can't be stopped or resubmitted, and its buttons look it
  const stop = old.getByRole('button', { name: 'Stop', exact: true });
  await expect(stop).toBeDisabled();
  expect(
    Number(await stop.evaluate(b => getComputedStyle(b).opacity))
  ).toBeLessThan(0.6);
  await page.screenshot({
    path: test.info().outputPath('launcher-job-earlier.png')
  });

  // the current run: double-click its row; the Job view shows its own lines
  await (await launcherCard(page, 'Job view')).click();
  await dialog
    .locator(
      '.jp-Ranktable-pickRow[data-job="pick-job"] .jp-Ranktable-pickName'
    )
    .dblclick();
  await expect(dialog).toHaveCount(0);
  const current = page.locator(`#ranktable-job-${second.uid}`);
  await expect(current).toBeVisible();
  await expect(current.locator('.jp-Ranktable-logLine').first()).toContainText(
    'pick-second',
    { timeout: 120000 }
  );
  await expect(current.locator('.jp-Ranktable-logView')).not.toContainText(
    'pick-first'
  );
  await page.screenshot({
    path: test.info().outputPath('launcher-job-view.png')
  });
  await stopAndWait(request, 'pick-job');
});

test('launcher → Rank layout: pick a rank-table JSON in the file dialog and the viewer plans it', async ({
  page,
  request,
  tmpPath
}) => {
  const topology = testTopology();
  const table = zigzagRankTable(); // zig-zags across the leaves
  // in the launcher's folder (the dialog opens there)
  const dir = `${tmpPath}/tables`;
  await request.put(`/api/contents/${dir}`, { data: { type: 'directory' } });
  for (const [name, content] of [
    [`${dir}/topology.yaml`, topology],
    [`${dir}/notes.txt`, 'not a rank table'],
    [`${dir}/launch_hccl.json`, JSON.stringify(table, null, 2)]
  ]) {
    const put = await request.put(`/api/contents/${name}`, {
      data: { type: 'file', format: 'text', content }
    });
    expect(put.status()).toBeLessThan(300);
  }
  await (await launcherCard(page, 'Rank layout')).click();
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog.locator('.jp-Dialog-header')).toHaveText(
    'Open a rank table in the Rank layout viewer'
  );
  const items = dialog.locator('.jp-DirListing-item');
  await items.filter({ hasText: 'tables' }).dblclick();
  await expect(items.filter({ hasText: 'launch_hccl.json' })).toBeVisible();
  // only JSON files are offered
  await expect(items.filter({ hasText: 'notes.txt' })).toHaveCount(0);
  await expect(items.filter({ hasText: 'topology.yaml' })).toHaveCount(0);
  await items.filter({ hasText: 'launch_hccl.json' }).click();
  await page.screenshot({
    path: test.info().outputPath('launcher-layout-dialog.png')
  });
  await dialog.locator('.jp-Dialog-button.jp-mod-accept').click();

  const layout = page.locator('.jp-Ranktable-layoutDoc:visible');
  await expect(layout).toBeVisible();
  await expect(
    page.locator('li.lm-TabBar-tab.jp-mod-current', {
      hasText: 'launch_hccl.json'
    })
  ).toBeVisible();
  // the topology from a file picker: the dialog opens in the rank table's folder
  await layout.getByRole('button', { name: 'Browse…' }).click();
  const picker = page.locator('.jp-Dialog');
  await expect(picker.locator('.jp-Dialog-header')).toHaveText(
    'Topology file for the Rank layout viewer'
  );
  await picker
    .locator('.jp-DirListing-item', { hasText: 'topology.yaml' })
    .dblclick();
  await expect(picker).toHaveCount(0);
  await expect(layout.getByRole('textbox')).toHaveValue(`${dir}/topology.yaml`);
  await expect(layout.locator('.jp-Ranktable-svg svg')).toBeVisible({
    timeout: 60000
  });
  await expect(layout.locator('.jp-Ranktable-svg [data-server]')).toHaveCount(
    12
  );
  await expect(layout.locator('.jp-Ranktable-figures')).toContainText(
    'speed-up'
  );
  await page.screenshot({
    path: test.info().outputPath('launcher-layout-view.png')
  });
});
