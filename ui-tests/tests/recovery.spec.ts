/**
 * Training that survives a fault (#29), in a real JupyterLab against the demo stack (auto-resume on):
 * an NPU fault injected with `ranktable sim fault` is resumed by the server with a notification; the Job
 * view's Lineage section shows run 1 -> the fault on that node -> run 2 from the checkpoint; Resume on a
 * stopped run starts the next run of the lineage from its last checkpoint.
 */
import { expect, test } from '@jupyterlab/galata';
import type { APIRequestContext } from '@playwright/test';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

import {
  STACK,
  TRAIN,
  WORKSPACE_PAGE,
  openSidebar,
  stopAndWait,
  submitSpec
} from './fixtures';

test.use({ autoGoto: true, ...WORKSPACE_PAGE });

async function submitTraining(
  request: APIRequestContext,
  name: string,
  saves: string
): Promise<{ uid: string }> {
  return submitSpec(request, {
    name,
    image: 'i',
    on_fault: 'resume',
    entry: {
      script: TRAIN,
      args: [
        '--steps',
        '100000',
        '--interval',
        '0.2',
        '--save',
        saves,
        '--save-interval',
        '5'
      ]
    }
  });
}

function checkpointFolder(): string {
  const saves = fs.mkdtempSync(path.join(os.tmpdir(), 'ranktable-ckpt-'));
  fs.chmodSync(saves, 0o777); // the pods' unprivileged user writes it
  return saves;
}

test('an NPU fault is resumed by itself, with a notification and the lineage in the Job view', async ({
  page,
  request
}) => {
  test.setTimeout(300 * 1000);
  const first = await submitTraining(request, 'heal', checkpointFolder());
  const panel = await openSidebar(page);
  const row = panel.locator(`.jp-Ranktable-jobRow[data-uid="${first.uid}"]`);
  await expect(row).toHaveAttribute('data-phase', 'Running', {
    timeout: 120000
  });
  const described = await (
    await request.get('/ranktable/jobs/default/heal')
  ).json();
  const node: string = described.pods[1].node;
  expect(node).toBeTruthy();
  execFileSync('python', [
    '-m', 'ranktable', 'sim', 'fault', node, '--npu', '3', '--at-step', '12',
    '--timeout', '120', '--state-dir', path.join(STACK, 'sim')
  ]); // prettier-ignore

  // the server resumes it and the panel says so, with Open on the new run
  const toast = page.locator('.Toastify__toast', {
    hasText: 'Job heal resumed by itself from checkpoint'
  });
  await expect(toast).toContainText(`without ${node}`, { timeout: 120000 });
  await toast.getByRole('button', { name: 'Open' }).click();
  const view = page.locator('.jp-Ranktable-jobView').last();
  await expect
    .poll(async () => view.getAttribute('data-uid'), { timeout: 30000 })
    .not.toBe(first.uid);
  await view.getByRole('tab', { name: 'Overview' }).click();
  const lineage = view.locator('.jp-Ranktable-lineage');
  await expect(lineage.locator('li[data-run]')).toHaveCount(2, {
    timeout: 60000
  });
  await expect(
    lineage.locator(`.jp-Ranktable-lineageFault[data-fault="${node}"]`)
  ).toContainText(`fault on ${node}`);
  await expect(lineage).toContainText('auto-resumed');
  await expect(lineage).toContainText(/from checkpoint \d+/);
  await expect(lineage.locator('.jp-Ranktable-goodput')).toContainText(
    'steps kept',
    {
      timeout: 60000
    }
  );
  await stopAndWait(request, 'heal');
});

test('Resume from a stopped run starts the next run of its lineage from its last checkpoint', async ({
  page,
  request
}) => {
  test.setTimeout(240 * 1000);
  const saves = checkpointFolder();
  const first = await submitTraining(request, 'byhand', saves);
  const panel = await openSidebar(page);
  const row = panel.locator(`.jp-Ranktable-jobRow[data-uid="${first.uid}"]`);
  await expect(row).toHaveAttribute('data-phase', 'Running', {
    timeout: 120000
  });
  await expect
    .poll(
      () =>
        fs.existsSync(path.join(saves, 'latest_checkpointed_iteration.txt')),
      {
        timeout: 60000
      }
    )
    .toBe(true);
  await row.click();
  const view = page.locator(`#ranktable-job-${first.uid}`);
  await stopAndWait(request, 'byhand');
  const resume = view.getByRole('button', { name: 'Resume', exact: true });
  await expect(resume).toBeEnabled({ timeout: 30000 });
  await resume.click();
  const toast = page.locator('.Toastify__toast', {
    hasText: 'resumed byhand from checkpoint step'
  });
  await expect(toast).toBeVisible({ timeout: 60000 });
  const next = page.locator('.jp-Ranktable-jobView').last();
  await expect
    .poll(async () => next.getAttribute('data-uid'), { timeout: 30000 })
    .not.toBe(first.uid);
  await next.getByRole('tab', { name: 'Overview' }).click();
  await expect(next.locator('.jp-Ranktable-lineage li[data-run]')).toHaveCount(
    2,
    {
      timeout: 60000
    }
  );
  await stopAndWait(request, 'byhand');
});
