/**
 * The sidebar at its default 250 px in a 1440x900 window: every section is as tall as its content (none cuts
 * its bottom row), the panel scrolls, and every button, row, field and hint of each expanded section can be
 * brought fully into the panel's visible box, where nothing covers it.
 */
import { expect, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

import { PANEL, WORKSPACE_PAGE, openSidebar, submit } from './fixtures';

test.use({ autoGoto: true, ...WORKSPACE_PAGE });

const SECTIONS = ['connections', 'jobs', 'sync', 'kernels', 'forwards'];
const ITEMS =
  'button, li, select, input, .jp-Ranktable-jobRow, .jp-Ranktable-muted, .jp-Ranktable-fieldHint';

type Box = { x: number; y: number; width: number; height: number };

function inside(a: Box, b: Box): boolean {
  return (
    a.x >= b.x - 1 &&
    a.y >= b.y - 1 &&
    a.x + a.width <= b.x + b.width + 1 &&
    a.y + a.height <= b.y + b.height + 1
  );
}

/** What is cut, out of view or covered in one section, as readable strings (empty when all is well). */
async function problems(
  scroller: Locator,
  section: Locator,
  id: string
): Promise<string[]> {
  const found: string[] = [];
  // the section shows all its content: it neither scrolls nor cuts inside itself
  const [scrollH, clientH] = await section.evaluate(el => [
    el.scrollHeight,
    el.clientHeight
  ]);
  if (scrollH > clientH + 1) {
    found.push(`${id}: content ${scrollH} px in a ${clientH} px box`);
  }
  const items = section.locator(ITEMS);
  const n = await items.count();
  let checked = 0;
  for (let i = 0; i < n; i++) {
    const item = items.nth(i);
    if (!(await item.isVisible())) {
      continue;
    }
    checked++;
    await item.scrollIntoViewIfNeeded();
    const label = `${id}: ${await item.evaluate(
      el =>
        `<${el.tagName.toLowerCase()}> "${(el.textContent || (el as HTMLInputElement).value || '').trim().slice(0, 40)}"`
    )}`;
    const box = (await item.boundingBox())!;
    if (!inside(box, (await section.boundingBox())!)) {
      found.push(`${label} outside its section`);
    }
    if (!inside(box, (await scroller.boundingBox())!)) {
      found.push(`${label} not fully in the panel's visible box`);
    }
    const covered = await item.evaluate(el => {
      // an inline element wrapped over two lines: the centre of its first line box
      const r = el.getClientRects()[0] ?? el.getBoundingClientRect();
      const hit = document.elementFromPoint(
        r.x + r.width / 2,
        r.y + r.height / 2
      );
      return !(hit === el || el.contains(hit));
    });
    if (covered) {
      found.push(`${label} covered by another element`);
    }
  }
  if (checked === 0) {
    found.push(`${id}: nothing visible to check`);
  }
  return found;
}

test('the sidebar at 250 px: no section cuts a row; every row can be scrolled fully into view', async ({
  page,
  request
}) => {
  await submit(request, 'sidebar-rows', 'sleep 600', 1);
  try {
    const panel = await openSidebar(page);
    await expect(panel.locator('[data-job="sidebar-rows"]')).toBeVisible({
      timeout: 60000
    });
    // the profiles have loaded (Connections lists the demo's profile)
    await expect(
      panel.locator('#jp-Ranktable-section-connections li').first()
    ).toBeVisible();
    const scroller = panel.locator('.jp-SidePanel-content');
    expect((await panel.boundingBox())!.width).toBeLessThanOrEqual(251);
    const found: string[] = [];
    for (const id of SECTIONS) {
      const section = page.locator(`#${PANEL} #jp-Ranktable-section-${id}`);
      await expect(section).toBeVisible();
      found.push(...(await problems(scroller, section, id)));
    }
    expect(found).toEqual([]);
    // the panel scrolls (its scrollbar is the affordance when the sections are taller than the window)
    expect(await scroller.evaluate(el => getComputedStyle(el).overflowY)).toBe(
      'auto'
    );
    // the sections follow each other: none overlaps the next one's title
    const boxes = await page
      .locator(`#${PANEL} .jp-SidePanel-content > *:not(.lm-mod-hidden)`)
      .evaluateAll(els =>
        els
          .filter(el => getComputedStyle(el).display !== 'none')
          .map(el => {
            const r = el.getBoundingClientRect();
            return [r.top, r.bottom];
          })
      );
    for (let i = 1; i < boxes.length; i++) {
      expect(boxes[i][0]).toBeGreaterThanOrEqual(boxes[i - 1][1] - 1);
    }
  } finally {
    await request.delete('/ranktable/jobs/default/sidebar-rows');
  }
});

test('the sidebar fits at 250 px: Sync on a few lines, names cut in the middle, sections stay collapsed (#31.3)', async ({
  page
}) => {
  const panel = await openSidebar(page);
  const profile = panel.locator('[data-profile="sim-notebook"]');
  await expect(profile).toBeVisible();
  // user@host:port on one line, cut in the middle if at all, whole in its tooltip
  const host = profile.locator('.jp-Ranktable-midEllipsis');
  await expect(host).toHaveAttribute('title', /^ma-user@127\.0\.0\.1:\d+$/);
  expect((await host.boundingBox())!.height).toBeLessThan(22);
  const sync = panel.locator('[data-section="sync"]');
  const dest = sync.locator('.jp-Ranktable-syncDest');
  await expect(dest).toHaveAttribute('title', /^sim-notebook:/);
  expect((await dest.boundingBox())!.width).toBeLessThanOrEqual(250);
  // download and settings live in dialogs; the section keeps state and actions only
  await expect(sync.getByLabel('Remote path', { exact: false })).toHaveCount(0);
  await sync.getByRole('button', { name: 'Download…' }).click();
  const dialog = page.locator('.jp-Dialog');
  await expect(
    dialog.getByLabel('Remote path (relative to the remote folder)')
  ).toBeVisible();
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(dialog).toHaveCount(0);
  await sync.getByRole('button', { name: 'Settings…' }).click();
  await expect(dialog.locator('[data-field="sync-mode"] select')).toHaveValue(
    'explicit'
  );
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  // with every section open, Remote kernels is reachable in the 900 px window without scrolling
  const kernelsTitle = panel.locator('.jp-AccordionPanel-title', {
    hasText: 'Remote kernels'
  });
  expect((await kernelsTitle.boundingBox())!.y).toBeLessThan(900 - 60);
  // each launcher card its own icon
  const icons = await page
    .locator('.jp-LauncherCard[data-category="Ranktable"] svg')
    .evaluateAll(els => els.map(el => el.innerHTML));
  expect(icons).toHaveLength(3);
  expect(new Set(icons).size).toBe(3);
  // a collapsed section stays collapsed after a reload (JupyterLab's state database)
  const connections = panel.locator('.jp-AccordionPanel-title', {
    hasText: 'Connections'
  });
  await expect(connections).toHaveAttribute('aria-expanded', 'true');
  // the workspace write that carries this collapse (an earlier debounced write may land first)
  const saved = page.waitForResponse(
    r =>
      r.url().includes('/api/workspaces') &&
      r.request().method() === 'PUT' &&
      (r.request().postData() ?? '').includes('sidebar-collapsed":["')
  );
  await connections.click();
  await expect(connections).toHaveAttribute('aria-expanded', 'false');
  await saved;
  await page.reload();
  const again = await openSidebar(page);
  await expect(
    again.locator('.jp-AccordionPanel-title', { hasText: 'Connections' })
  ).toHaveAttribute('aria-expanded', 'false');
  await expect(
    again.locator('.jp-AccordionPanel-title', { hasText: 'Sync' })
  ).toHaveAttribute('aria-expanded', 'true');
});
