/**
 * The Ranktable workspace in a real JupyterLab (Debian chromium) against the simulated Lite pool: the
 * sidebar at its default 250 px, Job views (one per run), job spec files in the form and the text editor,
 * restore after a reload, and the banner when the pool goes away. Screenshots for docs/ are taken only
 * with RANKTABLE_SCREENSHOTS=1 (`make screenshots`), so `make test` leaves the tree clean.
 */
import { expect, test } from '@jupyterlab/galata';
import type { APIRequestContext, Locator, Page } from '@playwright/test';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

import {
  LOOP,
  STACK,
  WORKSPACE_PAGE,
  openSidebar,
  shoot,
  submit
} from './fixtures';

test.use({ autoGoto: true, ...WORKSPACE_PAGE });
test.describe.configure({ mode: 'serial' });

async function stop(request: APIRequestContext, name: string): Promise<void> {
  await request.delete(`/ranktable/jobs/default/${name}`);
  await expect
    .poll(
      async () =>
        (await request.get(`/ranktable/jobs/default/${name}`)).status(),
      {
        timeout: 60000
      }
    )
    .toBe(404);
}

/** Every job name in the sidebar is on screen, inside the panel, not covered, and readable. */
async function expectNamesReadable(panel: Locator): Promise<void> {
  const box = (await panel.boundingBox())!;
  const rows = panel.locator('.jp-Ranktable-jobRow');
  const count = await rows.count();
  expect(count).toBeGreaterThan(0);
  for (let i = 0; i < count; i++) {
    const row = rows.nth(i);
    const name = row.locator('.jp-Ranktable-jobName');
    const b = (await name.boundingBox())!;
    expect(b.width).toBeGreaterThan(40);
    expect(b.x).toBeGreaterThanOrEqual(box.x);
    expect(b.x + b.width).toBeLessThanOrEqual(box.x + box.width);
    // the element at the name's centre is the name itself (nothing on top of it)
    const onTop = await name.evaluate(el => {
      const r = el.getBoundingClientRect();
      const hit = document.elementFromPoint(
        r.x + r.width / 2,
        r.y + r.height / 2
      );
      return hit === el || el.contains(hit);
    });
    expect(onTop).toBe(true);
    // truncated names carry the full name in the row's tooltip
    const full = await row.getAttribute('data-job');
    const clipped = await name.evaluate(el => el.scrollWidth > el.clientWidth);
    if (clipped) {
      expect(await row.getAttribute('title')).toContain(full!);
    } else {
      await expect(name).toHaveText(full!);
    }
    // phase and pods ready/total are visible too
    for (const cls of ['.jp-Ranktable-phase', '.jp-Ranktable-ready']) {
      const cell = (await row.locator(cls).boundingBox())!;
      expect(cell.x + cell.width).toBeLessThanOrEqual(box.x + box.width);
      expect(cell.x).toBeGreaterThanOrEqual(b.x + b.width);
    }
  }
}

test('the sidebar at 250 px: sections, and every job name readable', async ({
  page,
  request
}) => {
  await submit(request, 'bert-pretrain-long-name', LOOP('long'));
  await submit(request, 'crash', 'echo boom; exit 3', 1);
  const panel = await openSidebar(page);
  for (const title of ['Connections', 'Jobs', 'Sync', 'Remote kernels']) {
    await expect(
      panel.locator('.jp-AccordionPanel-title', { hasText: title })
    ).toBeVisible();
  }
  const row = panel.locator(
    '.jp-Ranktable-jobRow[data-job="bert-pretrain-long-name"]'
  );
  await expect(row).toHaveAttribute('data-phase', 'Running', {
    timeout: 120000
  });
  // a crash-looping job is marked, with the reason in its tooltip
  const crash = panel.locator('.jp-Ranktable-jobRow[data-job="crash"]');
  await expect(crash.locator('.jp-Ranktable-health.jp-mod-bad')).toBeVisible({
    timeout: 120000
  });
  await expect(crash).toHaveAttribute(
    'title',
    /exit code 3|Error|CrashLoopBackOff/
  );
  await expectNamesReadable(panel);
  await shoot(panel, 'sidebar');
  await stop(request, 'crash');
});

/** A plain browser reload (galata's page.reload also re-arranges the sidebar), until the app has started. */
async function reloadPlainly(page: Page): Promise<void> {
  await page.evaluate(() => window.location.reload());
  await page.waitForSelector('#jupyterlab-splash', { state: 'detached' });
  await page.waitForFunction(() => (window as any).jupyterapp?.started);
}

/** Run `uid`'s Job view, once its first log line shows `text`. */
async function runViewShowing(
  page: Page,
  uid: string,
  text: string
): Promise<Locator> {
  const view = page.locator(`#ranktable-job-${uid}`);
  await expect(view).toBeVisible();
  await expect(view.locator('.jp-Ranktable-logLine').first()).toContainText(
    text,
    { timeout: 120000 }
  );
  return view;
}

/** The main-area tab of run `uid`'s Job view. */
function runTab(page: Page, uid: string): Locator {
  return page.locator(`li.lm-TabBar-tab[data-id="ranktable-job-${uid}"]`);
}

test('a Job view per run: a same-name resubmit opens a new run with its own logs', async ({
  page,
  request
}) => {
  test.setTimeout(300 * 1000);
  const first = await submit(request, 'rerun', LOOP('first-run'));
  const panel = await openSidebar(page);
  await panel.locator('.jp-Ranktable-jobRow[data-job="rerun"]').click();
  const view1 = await runViewShowing(page, first.uid, 'first-run');
  // filters are labelled as what they are: rank id (parsed from the lines) and node rank (the pod)
  await view1.getByLabel('Rank id').fill('3');
  await expect(view1.locator('.jp-Ranktable-logLine').first()).toContainText(
    '[rank 3]'
  );
  await view1.getByLabel('Rank id').fill('');
  await expect(view1.getByLabel('Node rank')).toBeVisible();
  await shoot(page, 'job-view-logs');

  await stop(request, 'rerun');
  const second = await submit(request, 'rerun', LOOP('second-run'));
  expect(second.uid).not.toBe(first.uid);
  const row = panel.locator(`.jp-Ranktable-jobRow[data-uid="${second.uid}"]`);
  await expect(row).toBeVisible({ timeout: 60000 });
  await row.click();
  const view2 = await runViewShowing(page, second.uid, 'second-run');
  await expect(view2.locator('.jp-Ranktable-logView')).not.toContainText(
    'first-run'
  );
  // the earlier run stays open, says it ended, and keeps its own lines
  await runTab(page, first.uid).click();
  await expect(view1.locator('.jp-Ranktable-notice')).toContainText(
    'This run has ended',
    { timeout: 30000 }
  );
  await expect(view1.locator('.jp-Ranktable-logView')).not.toContainText(
    'second-run'
  );

  // overview: pods with node, leaf and IP; layout at full width with a tooltip at the cursor
  await runTab(page, second.uid).click();
  await view2.getByRole('tab', { name: 'Overview' }).click();
  await expect(view2.locator('.jp-Ranktable-pods tbody tr')).toHaveCount(2, {
    timeout: 30000
  });
  await expect(view2.locator('.jp-Ranktable-pods')).toContainText('leaf-');
  await shoot(page, 'job-view-overview');
  await view2.getByRole('tab', { name: 'Layout' }).click();
  const svg = view2.locator('.jp-Ranktable-svg svg');
  // opened while the new run's rank table may still be initializing (CI once): the tab plans again by
  // itself once it is complete, no click needed
  await expect(svg).toBeVisible({ timeout: 60000 });
  // the actual placement beside the preview's forecast, in one line above the figures
  await expect(view2.locator('.jp-Ranktable-placement')).toContainText(
    /^placement: .*actual leaf crossings \d+.*\(preview: predicted leaf crossings/
  );
  const frame = (await view2.locator('.jp-Ranktable-panZoom').boundingBox())!;
  const content = (await view2.boundingBox())!;
  expect(frame.width).toBeGreaterThan(content.width * 0.9);
  const server = view2.locator('.jp-Ranktable-svg [data-server]').first();
  const sb = (await server.boundingBox())!;
  await page.mouse.move(sb.x + sb.width / 2, sb.y + sb.height / 2);
  const tip = view2.locator('.jp-Ranktable-tooltip');
  await expect(tip).toContainText('ranks');
  const tb = (await tip.boundingBox())!;
  expect(Math.abs(tb.x - (sb.x + sb.width / 2))).toBeLessThan(40);
  expect(Math.abs(tb.y - (sb.y + sb.height / 2))).toBeLessThan(40);
  await shoot(page, 'job-view-layout');
});

test('a job spec file: the form and the text editor agree on the file', async ({
  page
}) => {
  await page.evaluate(async () => {
    await window.jupyterapp.commands.execute('ranktable:new-spec', { cwd: '' });
  });
  const form = page.locator('.jp-Ranktable-specEditor');
  await expect(form).toBeVisible();
  const doc = page.locator('.jp-Ranktable-specDocument');
  const path = await page.evaluate(
    () => (window.jupyterapp.shell.currentWidget as any).context.path as string
  );
  expect(path).toMatch(/\.rtjob\.yaml$/);
  // a new job opens from the shared folder (no template, no relative script): no issue before anything
  // is typed, the empty image only "to fill in"; the sections of a new job's decisions are open
  await expect(form.locator('#root_entry_script')).toHaveValue(
    /^\/.*\/train\.py$/
  );
  // the image is the last job's (the other tests' jobs), else left to fill in
  const image = await form.locator('#root_image').inputValue();
  await expect(
    form.getByText(image ? 'valid' : 'to fill in: image', { exact: true })
  ).toBeVisible({ timeout: 30000 });
  await expect(form.locator('[class^="jp-Ranktable-issue-"]')).toHaveCount(0);
  await expect(
    form.locator('.error-detail, .jp-Ranktable-fieldError, .jp-errorIndicator')
  ).toHaveCount(0);
  await expect(form.getByLabel('Value of image')).toHaveCount(0);
  for (const title of ['Basics', 'What runs', 'Resources']) {
    await expect(
      form.getByRole('button', { name: title, exact: true })
    ).toHaveAttribute('aria-expanded', 'true');
  }
  const advanced = form.getByRole('button', { name: 'Advanced', exact: true });
  await expect(advanced).toHaveAttribute('aria-expanded', 'false');
  await expect(form.locator('#root_routing')).toBeHidden();
  await advanced.click();
  await expect(form.locator('#root_routing')).toBeVisible();
  // each description once, as its field's help
  await expect(
    form.getByText('the container command as a list', { exact: false })
  ).toHaveCount(1);
  // a bad name is flagged beside its field once touched
  await form.locator('#root_name').fill('Bad_Name');
  await expect(
    form
      .locator('#root_name')
      .locator('xpath=ancestor::div[contains(@class,"form-group")][1]')
  ).toContainText('must match pattern');
  await form.locator('#root_name').fill('spec-job');
  await form.locator('#root_image').fill('bert:v1');
  await expect(form.locator('.jp-Ranktable-yaml')).toContainText('kind: Job', {
    timeout: 30000
  });
  await expect(form.getByText('valid', { exact: true })).toBeVisible();
  // the live preview sits beside the form: issues, planned layout and manifest above the fold
  const side = form.locator('.jp-Ranktable-specSideCol');
  const formBox = (await form
    .locator('.jp-Ranktable-specFormCol')
    .boundingBox())!;
  const sideBox = (await side.boundingBox())!;
  expect(sideBox.x).toBeGreaterThan(formBox.x + formBox.width - 1);
  for (const name of ['Issues', 'Planned layout']) {
    const box = (await side.getByRole('region', { name }).boundingBox())!;
    expect(box.y).toBeLessThan(900);
  }
  await shoot(page, 'spec-editor');
  // the preview says first, once, where the pool's scheduler is expected to place the job
  await form.getByRole('button', { name: 'Preview layout' }).click();
  await expect(form.locator('.jp-Ranktable-placement')).toContainText(
    /^preview: expected on \S+, \S+ \(the simulated pool's scheduler spreads/,
    { timeout: 60000 }
  );
  await expect(form.getByText(/^preview: expected on/)).toHaveCount(1);
  await page.keyboard.press('Control+s');

  // the same file as text: the form's change is there; a text edit shows up in the form
  await page.evaluate(async p => {
    await window.jupyterapp.commands.execute('docmanager:open', {
      path: p,
      factory: 'Editor'
    });
  }, path);
  const editor = page.locator('.jp-FileEditor .cm-content').last();
  await expect(editor).toContainText('name: spec-job');
  await page.evaluate(() => {
    const widget = window.jupyterapp.shell.currentWidget as any;
    const model = widget.content.model.sharedModel;
    model.setSource(model.getSource().replace('nodes: 2', 'nodes: 3'));
  });
  await page.locator('li.lm-TabBar-tab', { hasText: path }).first().click();
  await expect(doc.locator('#root_nodes')).toHaveValue('3');
});

test('a reload restores the open Job views and spec documents', async ({
  page,
  request
}) => {
  const run = await submit(request, 'restored', LOOP('restored'), 1);
  const panel = await openSidebar(page);
  await panel.locator(`.jp-Ranktable-jobRow[data-uid="${run.uid}"]`).click();
  await expect(page.locator(`#ranktable-job-${run.uid}`)).toBeVisible();
  // the layout (open documents) is saved to the workspace after a change: wait for the save that has
  // both documents (an earlier debounced save may land first)
  const saved = page.waitForResponse(r => {
    const body = r.request().postData() ?? '';
    return (
      r.url().includes('/api/workspaces') &&
      r.request().method() === 'PUT' &&
      body.includes('.rtjob.yaml') &&
      body.includes(run.uid)
    );
  });
  await page.evaluate(async () => {
    await window.jupyterapp.commands.execute('ranktable:new-spec', { cwd: '' });
  });
  const spec = await page.evaluate(
    () => (window.jupyterapp.shell.currentWidget as any).context.path as string
  );
  await saved;
  await page.waitForTimeout(500);
  await reloadPlainly(page);
  await expect(runTab(page, run.uid)).toHaveCount(1, { timeout: 30000 });
  await expect(
    page.locator('li.lm-TabBar-tab', { hasText: spec.split('/').pop()! })
  ).toHaveCount(1);
  await runTab(page, run.uid).click();
  await expect(
    page.locator(`#ranktable-job-${run.uid} .jp-Ranktable-logLine`).first()
  ).toContainText('restored', { timeout: 60000 });
});

test.describe('restored at once', () => {
  // the real workspace store: galata's in-page mock never sees the save sent as the page unloads
  test.use({ mockState: false, autoGoto: false });

  test('a Job view, a spec file and a layout reloaded at once are restored (#31.2)', async ({
    page,
    request
  }) => {
    const run = await submit(request, 'atonce', LOOP('atonce'), 1);
    await page.goto('workspaces/ranktable-at-once?reset');
    await page.waitForFunction(() => (window as any).jupyterapp?.started);
    const panel = await openSidebar(page);
    const row = panel.locator(`.jp-Ranktable-jobRow[data-uid="${run.uid}"]`);
    await expect(row).toBeVisible({ timeout: 30000 });
    await page.evaluate(async () => {
      await window.jupyterapp.commands.execute('docmanager:open', {
        path: 'layout/jobstart_hccl.json',
        factory: 'Rank layout'
      });
      await window.jupyterapp.commands.execute('docmanager:open', {
        path: 'bert.rtjob.yaml'
      });
    });
    await row.click();
    await expect(page.locator(`#ranktable-job-${run.uid}`)).toBeVisible();
    // reload at once: no wait for the workspace to be saved
    await reloadPlainly(page);
    await expect(runTab(page, run.uid)).toHaveCount(1, { timeout: 30000 });
    for (const name of ['bert.rtjob.yaml', 'jobstart_hccl.json']) {
      await expect(
        page.locator('#jp-main-dock-panel li.lm-TabBar-tab', { hasText: name })
      ).toHaveCount(1);
    }
  });
});

test('stopping the pool shows a banner with the reason, and it clears when the pool is back', async ({
  page,
  request
}) => {
  test.setTimeout(240 * 1000);
  await submit(request, 'survivor', LOOP('survivor'), 1);
  const panel = await openSidebar(page);
  await expect(panel.locator('.jp-Ranktable-jobRow').first()).toBeVisible({
    timeout: 60000
  });
  const kubeconfig = fs.readFileSync(
    path.join(STACK, 'sim', 'kubeconfig'),
    'utf8'
  );
  const port = /server:\s*https?:\/\/[^:]+:(\d+)/.exec(kubeconfig)![1];
  const ranktable = (...args: string[]) =>
    execFileSync('python', ['-m', 'ranktable', ...args], {
      stdio: 'pipe',
      timeout: 120000
    });
  ranktable('sim', 'stop', '--state-dir', path.join(STACK, 'sim'));
  const banner = panel.locator('.jp-Ranktable-banner');
  await expect(banner).toBeVisible({ timeout: 15000 });
  await expect(banner).toContainText('Cluster unavailable');
  await expect(banner.locator('.jp-Ranktable-bannerReason')).not.toBeEmpty();
  // the rows are the last known state, and say so
  await expect(panel.locator('.jp-Ranktable-jobList')).toHaveClass(
    /jp-mod-stale/
  );
  await shoot(panel, 'sidebar-banner');
  ranktable(
    'sim',
    'start',
    '--state-dir',
    path.join(STACK, 'sim'),
    '--port',
    port
  );
  await expect(banner).toHaveCount(0, { timeout: 60000 });
  await expect(panel.locator('.jp-Ranktable-jobList')).not.toHaveClass(
    /jp-mod-stale/
  );
});

test('the palette opens a Job view: pick one of the current runs', async ({
  page,
  request
}) => {
  const run = await submit(request, 'palette-job', LOOP('palette'), 1);
  const panel = await openSidebar(page);
  await expect(
    panel.locator(`.jp-Ranktable-jobRow[data-uid="${run.uid}"]`)
  ).toBeVisible({ timeout: 60000 });
  await page.evaluate(() => {
    void window.jupyterapp.commands.execute('ranktable:open-job');
  });
  const dialog = page.locator('.jp-Ranktable-runPickerDialog');
  await dialog.locator('.jp-Ranktable-pickRow[data-job="palette-job"]').click();
  await dialog.locator('.jp-Dialog-button.jp-mod-accept').click();
  await expect(page.locator(`#ranktable-job-${run.uid}`)).toBeVisible();
  await stop(request, 'palette-job');
});

test('Stop in the Job view archives the run, says how many lines it kept, and the view says ended at once', async ({
  page,
  request
}) => {
  test.setTimeout(180 * 1000);
  const run = await submit(request, 'stop-job', LOOP('stopping'), 1);
  const panel = await openSidebar(page);
  await panel.locator(`.jp-Ranktable-jobRow[data-uid="${run.uid}"]`).click();
  const view = page.locator(`#ranktable-job-${run.uid}`);
  await expect(view.locator('.jp-Ranktable-logLine').first()).toContainText(
    'stopping',
    { timeout: 120000 }
  );
  await view.getByRole('button', { name: 'Stop', exact: true }).click();
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog).toContainText('Its logs are archived first');
  await dialog.locator('.jp-Dialog-button.jp-mod-warn').click();
  await expect(page.getByText(/[\d,]+ (new )?log lines of run/)).toBeVisible({
    timeout: 60000
  });
  const header = view.locator('.jp-Ranktable-jobHeader');
  // the run's record says what became of it (#24.4): not the last phase seen, not "Running"
  await expect(header.locator('.jp-Ranktable-phase')).toHaveText('Stopped', {
    timeout: 5000
  });
  await expect(header).not.toContainText('Running');
  await expect(
    view.getByRole('button', { name: 'Stop', exact: true })
  ).toBeDisabled();
  const runs = await (
    await request.get('/ranktable/jobs/default/stop-job/runs')
  ).json();
  expect(runs.runs.map((r: { uid: string }) => r.uid)).toEqual([run.uid]);
});
