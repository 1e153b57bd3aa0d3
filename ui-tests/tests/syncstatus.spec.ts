/**
 * The Notebook-instance sync state in JupyterLab's status bar, against the demo stack's simulated
 * instance (`sim-notebook`): a save in the synced folder shows "uploading", then "Synced HH:MM"; a click
 * opens the sidebar's Sync section. At 1440x900, with the sidebar at its default 250 px.
 */
import { expect, test } from '@jupyterlab/galata';
import type { APIRequestContext } from '@playwright/test';
import * as path from 'path';

import { IMG, PANEL, SHOTS, WORKSPACE_PAGE } from './fixtures';

test.use({ autoGoto: true, ...WORKSPACE_PAGE });

async function profile(request: APIRequestContext, name: string) {
  const data = await (await request.get('/ranktable/profiles')).json();
  return data.profiles.find((p: any) => p.name === name);
}

test('a save in the synced folder: the status bar shows uploading, then synced; a click opens Sync', async ({
  page,
  request,
  tmpPath
}) => {
  test.setTimeout(120 * 1000);
  const before = await profile(request, 'sim-notebook');
  expect(before).toBeTruthy();
  // only this profile uploads automatically meanwhile (earlier tests may have added others on the same instance)
  const others = (await (await request.get('/ranktable/profiles')).json())
    .profiles as any[];
  const paused = others.filter(
    p => p.name !== 'sim-notebook' && p.sync?.upload !== 'never'
  );
  for (const p of paused) {
    await request.patch(`/ranktable/profiles/${p.name}`, {
      data: { sync: { upload: 'never' } }
    });
  }
  // the folder of this test is synced to the instance, uploaded on every explicit save
  const patched = await request.patch('/ranktable/profiles/sim-notebook', {
    data: { sync: { upload: 'explicit' }, local_dir: tmpPath }
  });
  expect(patched.status(), await patched.text()).toBe(200);
  try {
    const item = page.locator('#jp-Ranktable-syncStatus button');
    await expect(item).toBeVisible({ timeout: 30000 });
    await expect(item).toHaveAttribute('data-state', /idle|conflict/);
    // every state the item shows, recorded in the page (an upload may take less than a poll)
    await item.evaluate((button: HTMLElement) => {
      const seen: string[] = [];
      (window as any).__syncStates = seen;
      const record = () =>
        seen.push(`${button.dataset.state}|${button.textContent}`);
      record();
      new MutationObserver(record).observe(button, {
        attributes: true,
        childList: true,
        subtree: true,
        characterData: true
      });
    });

    const saved = await request.put(
      `/api/contents/${tmpPath}/train-${Date.now()}.py`,
      {
        data: {
          type: 'file',
          format: 'text',
          content: "print('saved in jupyter')\n"
        }
      }
    );
    expect(saved.ok(), await saved.text()).toBe(true);
    await expect(item).toHaveText(/^Synced \d/, { timeout: 30000 });
    await expect(item).toHaveAttribute('data-state', 'idle');
    const seen: string[] = await page.evaluate(
      () => (window as any).__syncStates
    );
    const uploading = seen.findIndex(s =>
      s.startsWith('uploading|Sync: uploading 1 file')
    );
    expect(uploading, seen.join('\n')).toBeGreaterThanOrEqual(0);
    const synced = seen.findIndex(s => /^idle\|Synced \d/.test(s));
    expect(synced, seen.join('\n')).toBeGreaterThan(uploading);
    expect(await item.getAttribute('title')).toMatch(
      /Saves are uploaded to .*sim-notebook.*last sync/
    );
    // one item, on one line, inside the status bar
    await expect(page.locator('#jp-Ranktable-syncStatus')).toHaveCount(1);
    const bar = (await page.locator('#jp-main-statusbar').boundingBox())!;
    const box = (await item.boundingBox())!;
    expect(box.y).toBeGreaterThanOrEqual(bar.y - 1);
    expect(box.y + box.height).toBeLessThanOrEqual(bar.y + bar.height + 1);
    const shot = SHOTS
      ? path.join(IMG, 'sync-status.png')
      : test.info().outputPath('sync-status.png');
    await page.screenshot({ path: shot });

    // the click opens the sidebar's Sync section
    await item.click();
    const sync = page.locator(`#${PANEL} [data-section="sync"]`);
    await expect(sync).toBeVisible();
    // its Local folder is the folder synced to the profile, not "."
    await sync
      .locator('[data-field="sync-profile"] select')
      .selectOption('sim-notebook');
    await expect(sync.locator('[data-field="sync-local"] input')).toHaveValue(
      tmpPath
    );
    await page.sidebar.setWidth(250, 'left');
    // tall enough to use: its upload button is in the section's visible box
    const visible = (await page
      .locator('#jp-Ranktable-section-sync')
      .boundingBox())!;
    const upload = (await sync
      .getByRole('button', { name: 'Upload now' })
      .boundingBox())!;
    expect(upload.y).toBeGreaterThanOrEqual(visible.y);
    expect(upload.y + upload.height).toBeLessThanOrEqual(
      visible.y + visible.height
    );
    await page.screenshot({
      path: test.info().outputPath('sync-status-open.png')
    });
  } finally {
    for (const p of paused) {
      await request.patch(`/ranktable/profiles/${p.name}`, {
        data: { sync: { upload: p.sync?.upload ?? 'explicit' } }
      });
    }
    await request.patch('/ranktable/profiles/sim-notebook', {
      data: { sync: { upload: before.sync?.upload ?? 'explicit' } }
    });
  }
});
