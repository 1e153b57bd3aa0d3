/**
 * The Ranktable sidebar's Connections, Sync and Remote kernels sections and the rank layout viewer in a
 * real JupyterLab (Debian chromium) against the simulated Lite pool and the simulated Notebook instance.
 * Jobs, Job views and spec files are in workspace.spec.ts. Screenshots only with
 * RANKTABLE_SCREENSHOTS=1 (`make screenshots`).
 */
import { expect, galata, test } from '@jupyterlab/galata';
import type { IJupyterLabPageFixture as Page } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';
import * as path from 'path';

import { testTopology, zigzagRankTable } from './fixtures';

const IMG = path.resolve(__dirname, '..', '..', 'docs', 'img');
const WORKSPACE = path.resolve(__dirname, '..', '.stack', 'workspace');
const PANEL = 'jp-ranktable-panel';
const PYTHON = path.resolve(__dirname, '..', '..', '.venv', 'bin', 'python');

test.use({ autoGoto: true, mockSettings: galata.DEFAULT_SETTINGS });
test.describe.configure({ mode: 'serial' });

function section(page: Page, id: string): Locator {
  return page.locator(`#${PANEL} [data-section="${id}"]`);
}

async function openPanel(page: Page): Promise<void> {
  await page.sidebar.openTab(PANEL);
  await page.sidebar.setWidth(250, 'left');
  await expect(section(page, 'connections')).toBeVisible();
}

/** The accordion title of a sidebar section. */
function title(page: Page, id: string): Locator {
  const names: Record<string, string> = {
    connections: 'Connections',
    jobs: 'Jobs',
    sync: 'Sync',
    kernels: 'Remote kernels'
  };
  return page.locator(`#${PANEL} .jp-AccordionPanel-title`, {
    hasText: names[id]
  });
}

async function expand(page: Page, id: string): Promise<Locator> {
  const t = title(page, id);
  if ((await t.getAttribute('aria-expanded')) !== 'true') {
    await t.click();
  }
  await expect(t).toHaveAttribute('aria-expanded', 'true');
  return section(page, id);
}

async function collapse(page: Page, id: string): Promise<void> {
  const t = title(page, id);
  if ((await t.getAttribute('aria-expanded')) === 'true') {
    await t.click();
  }
}

const SCREENSHOTS = process.env.RANKTABLE_SCREENSHOTS === '1';

async function shoot(s: Locator, name: string): Promise<void> {
  await s.scrollIntoViewIfNeeded();
  await s.screenshot(
    SCREENSHOTS ? { path: path.join(IMG, `${name}.png`) } : {}
  );
}

test('the sidebar opens with its sections and palette commands', async ({
  page
}) => {
  await openPanel(page);
  for (const id of ['connections', 'jobs', 'sync', 'kernels']) {
    await expect(title(page, id)).toBeVisible();
  }
  await page.keyboard.press('Control+Shift+C');
  await page.locator('.lm-CommandPalette-input').fill('Ranktable');
  for (const label of ['New Ranktable job', 'Ranktable: Refresh jobs']) {
    await expect(
      page.locator('.lm-CommandPalette-item', { hasText: label })
    ).toBeVisible();
  }
  await page.keyboard.press('Escape');
});

test('add a profile and test it', async ({ page, request }) => {
  const profiles = await (await request.get('/ranktable/profiles')).json();
  const sim = profiles.profiles.find((p: any) => p.name === 'sim-notebook');
  expect(sim).toBeTruthy();
  await openPanel(page);
  const s = await expand(page, 'connections');
  await s.getByRole('button', { name: 'Add profile…' }).click();
  await s.locator('#jp-Ranktable-field-profile-name').fill('box');
  // `localhost` is not in known_hosts (the simulator pinned 127.0.0.1): the host-key dialog must appear
  await s.locator('#jp-Ranktable-field-profile-host').fill('localhost');
  await s.locator('#jp-Ranktable-field-profile-port').fill('99999');
  await s.getByRole('button', { name: 'Save' }).click();
  await expect(
    s.locator('[data-field="profile-port"] .jp-Ranktable-fieldError')
  ).toContainText('65535');
  await s.locator('#jp-Ranktable-field-profile-port').fill(String(sim.port));
  await s.locator('#jp-Ranktable-field-profile-user').fill(sim.user);
  await s.locator('#jp-Ranktable-field-profile-key_file').fill(sim.key_file);
  // the profile's default folder (HOME is the simulated instance's root): no path of this machine in the pictures
  await s.locator('#jp-Ranktable-field-profile-remote_dir').fill('~/work');
  await s.getByRole('button', { name: 'Save' }).click();
  const row = s.locator('[data-profile="box"]');
  await expect(row).toBeVisible();
  await row.getByRole('button', { name: 'Test' }).click();
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog).toContainText('Unknown host key', { timeout: 30000 });
  await expect(dialog.locator('.jp-Ranktable-fingerprint')).toContainText(
    'SHA256:'
  );
  await shoot(dialog.locator('.jp-Dialog-content'), 'host-key');
  await dialog.getByRole('button', { name: 'Accept and connect' }).click();
  await expect(row.locator('.jp-Ranktable-badge')).toHaveText('connected', {
    timeout: 30000
  });
  await shoot(s, 'connections');
});

test('sync a folder to the instance', async ({ page, request }) => {
  for (const [name, content] of [
    ['project/model.py', 'LAYERS = 24\n'],
    ['project/data/config.json', '{"lr": 0.1}\n']
  ]) {
    const dir = path.dirname(name);
    await request.put(`/api/contents/${dir}`, { data: { type: 'directory' } });
    await request.put(`/api/contents/${name}`, {
      data: { type: 'file', format: 'text', content }
    });
  }
  await openPanel(page);
  await collapse(page, 'connections');
  const s = await expand(page, 'sync');
  try {
    await s.locator('#jp-Ranktable-field-sync-profile').selectOption('box');
    await s.locator('#jp-Ranktable-field-sync-local').fill('project');
    await s.getByRole('button', { name: 'Upload now' }).click();
    await expect(s.locator('.jp-Ranktable-ok')).toContainText('uploaded', {
      timeout: 60000
    });
    await expect(s.locator('progress')).toBeVisible();
    await shoot(s, 'sync');
  } finally {
    // the specs after this one (sidebar, screens) see the demo's one profile, as a new user does
    const gone = await request.delete('/ranktable/profiles/box');
    expect(gone.status(), await gone.text()).toBe(200);
  }
});

test('plan a rank-table file on a topology file: given vs planned', async ({
  page,
  request
}) => {
  const topology = testTopology();
  const table = zigzagRankTable(); // zig-zags across the leaves
  for (const [name, content] of [
    ['plans/topology.yaml', topology],
    ['plans/jobstart_hccl.json', JSON.stringify(table, null, 2)]
  ]) {
    await request.put('/api/contents/plans', { data: { type: 'directory' } });
    await request.put(`/api/contents/${name}`, {
      data: { type: 'file', format: 'text', content }
    });
  }
  // "Open With → Rank layout" on the rank-table JSON, planned on the topology file
  await page.evaluate(async () => {
    await window.jupyterapp.commands.execute('docmanager:open', {
      path: 'plans/jobstart_hccl.json',
      factory: 'Rank layout'
    });
  });
  const layout = page.locator('.jp-Ranktable-layoutDoc');
  await layout.getByRole('textbox').fill('plans/topology.yaml');
  await layout.getByRole('button', { name: 'Plan' }).click();
  await expect(layout.locator('.jp-Ranktable-svg svg')).toBeVisible({
    timeout: 60000
  });
  await expect(layout.locator('.jp-Ranktable-figures')).toContainText(
    'speed-up'
  );
  const speedup = await layout.locator('.jp-Ranktable-speedup').innerText();
  expect(Number(speedup.replace('×', ''))).toBeGreaterThan(1);
  const server = layout.locator('.jp-Ranktable-svg [data-server]').first();
  await server.hover();
  await expect(layout.locator('.jp-Ranktable-tooltip')).toContainText('leaf');
  await shoot(layout, 'layout-viewer');
});

test('open a notebook on the simulated instance and run code there', async ({
  page
}) => {
  test.setTimeout(240 * 1000);
  await openPanel(page);
  await collapse(page, 'connections');
  const s = await expand(page, 'kernels');
  // the simulated instance runs commands locally: its "remote" Python is this venv's
  await s.locator('#jp-Ranktable-field-kernel-python').fill(PYTHON);
  await shoot(s, 'kernels');
  await s
    .getByRole('button', { name: 'Open a notebook on sim-notebook' })
    .click();
  await expect(s.locator('.jp-Ranktable-ok')).toContainText(
    'Python (sim-notebook)',
    { timeout: 60000 }
  );
  await expect(page.locator('.jp-NotebookPanel').first()).toBeVisible();
  await page.notebook.setCell(
    0,
    'code',
    'import os; print("cwd=" + os.getcwd())'
  );
  await page.notebook.runCell(0);
  const output = await page.notebook.getCellTextOutput(0);
  expect((output ?? []).join('')).toContain('cwd=');
  expect((output ?? []).join('')).toContain('notebook');
});

test('dark theme: the sidebar follows the theme variables', async ({
  page
}) => {
  await page.theme.setDarkTheme();
  await openPanel(page);
  const background = await page
    .locator(`#${PANEL} .jp-Ranktable-sectionBody`)
    .first()
    .evaluate(
      el => getComputedStyle(el.closest('.jp-Ranktable-panel')!).backgroundColor
    );
  expect(background).not.toBe('rgb(255, 255, 255)');
  await shoot(page.locator(`#${PANEL}`), 'sidebar-dark');
  await page.theme.setLightTheme();
});
