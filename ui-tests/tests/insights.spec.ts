/**
 * A failing job explains itself in the browser (issue: training observability): the Job view's Metrics
 * tab shows the diagnosis on top, naming the first failing rank and its error code, the loss curve plots
 * from the log lines, and a finished job's notification "Open" action opens its metrics and diagnosis.
 */
import { expect, test } from '@jupyterlab/galata';

import { TRAIN, WORKSPACE_PAGE, openSidebar, submitSpec } from './fixtures';

test.use({ autoGoto: true, ...WORKSPACE_PAGE });

test('a failing job: the diagnosis on top names the first failing rank; the loss plots', async ({
  page,
  request
}) => {
  test.setTimeout(300 * 1000);
  const panel = await openSidebar(page);
  // 2 pods x 8 NPUs = 16 ranks; rank 1 fails first with EI0006 at step 12, the others at step 20
  const run = await submitSpec(request, {
    name: 'explain',
    entry: {
      script: TRAIN,
      args: [
        '--steps',
        '200',
        '--interval',
        '0.2',
        '--fail-rank',
        '1',
        '--fail-rank-at',
        '12',
        '--victims-fail-at',
        '20'
      ]
    }
  });

  await panel.locator('.jp-Ranktable-jobRow[data-job="explain"]').click();
  const view = page.locator(`#ranktable-job-${run.uid}`);
  await expect(view).toBeVisible();
  await view.getByRole('tab', { name: 'Metrics' }).click();
  // the loss curve plots while the job runs
  const chart = view.locator('.jp-ranktable-chart svg polyline').first();
  await expect(chart).toBeVisible({ timeout: 120000 });
  // the diagnosis names the first failing rank, its code, and where it runs
  const first = view.locator('.jp-ranktable-first-failure');
  await expect(first).toContainText('First failure: rank 1', {
    timeout: 150000
  });
  await expect(first).toContainText('EI0006');
  await expect(first).toContainText('leaf');
  const box = (await first.boundingBox())!;
  const chartBox = (await chart.boundingBox())!;
  expect(box.y).toBeLessThan(chartBox.y); // diagnosis on top

  await request.delete('/ranktable/jobs/default/explain');
});

test('a finished job: a notification with the one-line diagnosis opens metrics and diagnosis', async ({
  page,
  request
}) => {
  test.setTimeout(240 * 1000);
  await openSidebar(page);
  await submitSpec(request, {
    name: 'finish',
    nodes: 1,
    npus_per_node: 2,
    entry: { script: TRAIN, args: ['--steps', '10', '--interval', '0.1'] }
  });
  // JupyterLab's toasts, or its notification centre when toasts are off
  const toast = page
    .locator('.Toastify__toast')
    .filter({ hasText: 'Job finish: Completed' });
  await expect(toast.first()).toBeVisible({ timeout: 180000 });
  await toast.first().getByRole('button', { name: 'Open' }).click();
  const insights = page.locator('.jp-ranktable-insights').last();
  await expect(insights).toBeVisible({ timeout: 30000 });
  await expect(
    insights.locator('.jp-ranktable-chart svg polyline').first()
  ).toBeVisible({
    timeout: 60000
  });
  await request.delete('/ranktable/jobs/default/finish');
});
