/**
 * A run is its own record (#24.4, #24.6), in a real JupyterLab against the simulated pool at 1440x900 with the
 * sidebar at 250 px: Stop from the sidebar confirms once and says what it does; a stopped run's Job view says
 * "Stopped" and resubmits; a Resubmit over the running run confirms first; a crash-looping job is marked
 * failing in the sidebar and in its Job view's header, with one notification for the run.
 */
import { expect, test } from '@jupyterlab/galata';

import {
  LOOP,
  WORKSPACE_PAGE,
  openSidebar,
  shoot,
  stopAndWait,
  submit
} from './fixtures';

test.use({ autoGoto: true, ...WORKSPACE_PAGE });
test.describe.configure({ mode: 'serial' });

test('Stop from the sidebar confirms; the stopped run resubmits from its view; a resubmit over a running run confirms', async ({
  page,
  request
}) => {
  test.setTimeout(300 * 1000);
  const first = await submit(request, 'again', LOOP('first'), 1);
  const panel = await openSidebar(page);
  const row = panel.locator(`.jp-Ranktable-jobRow[data-uid="${first.uid}"]`);
  await expect(row).toHaveAttribute('data-phase', 'Running', {
    timeout: 120000
  });
  await row.click();
  const view = page.locator(`#ranktable-job-${first.uid}`);
  await expect(view.locator('.jp-Ranktable-logLine').first()).toContainText(
    'first',
    { timeout: 120000 }
  );

  // the sidebar's "Stop job" asks once, saying what it will do
  await row.click({ button: 'right' });
  await page.locator('.lm-Menu-item', { hasText: 'Stop job' }).click();
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog).toContainText(
    `Stop again (run ${first.uid.slice(0, 8)})`
  );
  await expect(dialog).toContainText('Its logs are archived first');
  await shoot(page, 'runs-stop-confirm');
  await dialog.getByRole('button', { name: 'Stop', exact: true }).click();
  await expect(dialog).toHaveCount(0);

  // the stopped run's view: its final phase, Stop off with a reason, Resubmit on
  const header = view.locator('.jp-Ranktable-jobHeader');
  await expect(header.locator('.jp-Ranktable-phase')).toHaveText('Stopped', {
    timeout: 60000
  });
  const stopButton = view.getByRole('button', { name: 'Stop', exact: true });
  await expect(stopButton).toBeDisabled();
  await expect(stopButton).toHaveAttribute('title', /has ended/);
  const resubmit = view.getByRole('button', { name: 'Resubmit' });
  await expect(resubmit).toBeEnabled();
  await expect(resubmit).toHaveAttribute('title', /new run/);
  await shoot(page, 'runs-stopped-view');
  await resubmit.click();
  await expect(page.locator('.jp-Dialog')).toHaveCount(0); // nothing to stop: no question
  const second = page.locator('.jp-Ranktable-jobView').last();
  await expect
    .poll(async () => second.getAttribute('data-uid'), { timeout: 60000 })
    .not.toBe(first.uid);
  const secondUid = (await second.getAttribute('data-uid'))!;
  await expect(second.locator('.jp-Ranktable-logLine').first()).toContainText(
    'first',
    { timeout: 120000 }
  );

  // Resubmit over the running run: asked once; Cancel leaves it running
  await second.getByRole('button', { name: 'Resubmit' }).click();
  await expect(dialog).toContainText(
    `The running run ${secondUid.slice(0, 8)} is stopped first`
  );
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  const jobs = await (await request.get('/ranktable/jobs')).json();
  expect(jobs.jobs.find((j: { name: string }) => j.name === 'again').uid).toBe(
    secondUid
  );
  await stopAndWait(request, 'again');
});

test('a crash-looping job is marked failing in the sidebar, with one notification for the run', async ({
  page,
  request
}) => {
  test.setTimeout(240 * 1000);
  const panel = await openSidebar(page);
  const crash = await submit(request, 'crashloop', 'echo boom; exit 3', 1);
  const row = panel.locator(`.jp-Ranktable-jobRow[data-uid="${crash.uid}"]`);
  await expect(row).toHaveAttribute('data-failing', /exit code 3/, {
    timeout: 120000
  });
  await expect(row.locator('.jp-Ranktable-phase')).toHaveText('Failing');
  await expect(row.locator('.jp-Ranktable-ready')).not.toContainText('ready');
  const toasts = page
    .locator('.Toastify__toast')
    .filter({ hasText: 'Job crashloop is failing' });
  await expect(toasts.first()).toBeVisible({ timeout: 30000 });
  await shoot(page, 'runs-failing-sidebar');
  // its Job view's header says so too, never "Running · pods 1/1 ready" (#24)
  await row.click();
  const header = page.locator(
    `#ranktable-job-${crash.uid} .jp-Ranktable-jobHeader`
  );
  await expect(header.locator('.jp-Ranktable-phase')).toHaveText('Failing', {
    timeout: 30000
  });
  await expect(header).toContainText(/failing: .*exit code 3/);
  await expect(header).not.toContainText('ready');
  // more restarts (the row changes again): still one notification for this run
  const restarts = async () =>
    Number(
      /(\d+) restarts?/.exec((await row.getAttribute('title')) ?? '')?.[1] ?? 0
    );
  const seen = await restarts();
  await expect.poll(restarts, { timeout: 120000 }).toBeGreaterThan(seen);
  await expect(toasts).toHaveCount(1);
  await stopAndWait(request, 'crashloop');
});
