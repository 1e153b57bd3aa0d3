/**
 * The Ranktable panel in a real JupyterLab (Debian chromium) against the simulated Lite pool and the
 * simulated Notebook instance: profiles, sync, compose with validation, submit, Running, layout, logs
 * from every pod, stop. With RANKTABLE_SCREENSHOTS=1 (`make screenshots`) each section is photographed into
 * docs/img/; otherwise nothing in the repository is written.
 */
import { expect, galata, test } from '@jupyterlab/galata';
import type { Locator, Page } from '@playwright/test';
import * as path from 'path';

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
  await page.sidebar.setWidth(560, 'left');
  await expect(page.locator(`#${PANEL} .jp-Ranktable-header`)).toBeVisible();
}

async function expand(page: Page, id: string): Promise<Locator> {
  const s = section(page, id);
  const header = s.locator('.jp-Ranktable-sectionHeader');
  if ((await header.getAttribute('aria-expanded')) !== 'true') {
    await header.click();
  }
  await expect(header).toHaveAttribute('aria-expanded', 'true');
  return s;
}

async function collapse(page: Page, id: string): Promise<void> {
  const header = section(page, id).locator('.jp-Ranktable-sectionHeader');
  if ((await header.getAttribute('aria-expanded')) === 'true') {
    await header.click();
  }
}

const SCREENSHOTS = process.env.RANKTABLE_SCREENSHOTS === '1';

async function shoot(s: Locator, name: string): Promise<void> {
  await s.scrollIntoViewIfNeeded();
  await s.screenshot(
    SCREENSHOTS ? { path: path.join(IMG, `${name}.png`) } : {}
  );
}

test('the panel opens with its sections and palette commands', async ({
  page
}) => {
  await openPanel(page);
  for (const id of [
    'connections',
    'sync',
    'compose',
    'layout',
    'jobs',
    'logs',
    'kernels'
  ]) {
    await expect(section(page, id)).toBeVisible();
  }
  await page.keyboard.press('Control+Shift+C');
  await page.locator('.lm-CommandPalette-input').fill('Ranktable');
  await expect(
    page.locator('.lm-CommandPalette-item', { hasText: 'Ranktable: Jobs' })
  ).toBeVisible();
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
  await s
    .locator('#jp-Ranktable-field-profile-remote_dir')
    .fill(sim.remote_dir);
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
  await s.locator('#jp-Ranktable-field-sync-profile').selectOption('box');
  await s.locator('#jp-Ranktable-field-sync-local').fill('project');
  await s.getByRole('button', { name: 'Upload now' }).click();
  await expect(s.locator('.jp-Ranktable-ok')).toContainText('uploaded', {
    timeout: 60000
  });
  await expect(s.locator('progress')).toBeVisible();
  await shoot(s, 'sync');
});

test('compose a 4-node job, see validation and the layout, submit, watch it run, read logs, stop', async ({
  page
}) => {
  test.setTimeout(300 * 1000);
  await openPanel(page);
  await collapse(page, 'connections');
  const compose = await expand(page, 'compose');
  await compose.locator('#jp-Ranktable-field-name').fill('bert4');
  await compose
    .locator('#jp-Ranktable-field-image')
    .fill('bert_pretrain_mindspore:v1');
  await compose
    .locator('#jp-Ranktable-field-command')
    .fill(
      `python3 ${WORKSPACE}/project/train.py --steps 100000 --interval 0.2`
    );
  await compose.locator('#jp-Ranktable-field-nodes').fill('4');
  await compose.locator('#jp-Ranktable-field-npus_per_node').fill('4');
  // the server's rule, shown next to the field as you type
  const npus = compose.locator(
    '[data-field="npus_per_node"] .jp-Ranktable-fieldError'
  );
  await expect(npus).toBeVisible({ timeout: 20000 });
  await expect(compose.getByRole('button', { name: 'Submit' })).toBeDisabled();
  await shoot(compose, 'compose-validation');
  await compose.locator('#jp-Ranktable-field-npus_per_node').fill('8');
  await expect(npus).toHaveCount(0, { timeout: 20000 });
  await expect(compose.locator('.jp-Ranktable-pre')).toContainText(
    'minAvailable: 4'
  );
  await shoot(compose, 'compose');

  // planned layout of the composed job on the pool's topology
  await compose.getByRole('button', { name: 'Show layout' }).click();
  const layout = section(page, 'layout');
  await expect(layout.locator('.jp-Ranktable-svg svg')).toBeVisible({
    timeout: 60000
  });
  await expect(layout.locator('.jp-Ranktable-figures')).toContainText(
    'speed-up'
  );

  await compose.getByRole('button', { name: 'Submit' }).click();
  await expect(compose.locator('.jp-Ranktable-ok')).toContainText(
    'Submitted bert4'
  );
  await collapse(page, 'compose');
  await collapse(page, 'layout');

  // the watch keeps the table live: the job reaches Running
  const jobs = await expand(page, 'jobs');
  const row = jobs.locator('tr[data-job="bert4"]');
  await expect(row).toHaveAttribute('data-phase', 'Running', {
    timeout: 120000
  });
  await shoot(jobs, 'jobs');
  // and a notification tells about the phase change
  await expect(page.getByText(/Job bert4: \w+ → Running/).first()).toBeVisible({
    timeout: 30000
  });

  // logs from every pod
  await row.getByRole('button', { name: 'Logs' }).click();
  const logs = section(page, 'logs');
  await expect(logs.locator('.jp-Ranktable-muted').first()).toContainText(
    '4 pods',
    { timeout: 120000 }
  );
  await expect(logs.locator('select[aria-label="Pod"] option')).toHaveCount(5);
  await logs.locator('input[aria-label="Search logs"]').fill('loss');
  await expect(logs.locator('.jp-Ranktable-logLine mark').first()).toBeVisible({
    timeout: 60000
  });
  await shoot(logs, 'logs');
  await collapse(page, 'logs');

  // the running job's layout; hovering a server shows its ranks, pod, node and leaf
  await row.getByRole('button', { name: 'Layout' }).click();
  await expect(layout.locator('.jp-Ranktable-svg svg')).toBeVisible({
    timeout: 60000
  });
  await expect(layout.locator('.jp-Ranktable-muted').first()).toContainText(
    'Running job default/bert4'
  );
  const server = layout.locator('.jp-Ranktable-svg [data-server]').first();
  await server.hover();
  await expect(layout.locator('.jp-Ranktable-hover')).toContainText('ranks');
  await shoot(layout, 'layout');
  await collapse(page, 'layout');

  // stop it
  await row.getByRole('button', { name: 'Stop' }).click();
  await page
    .locator('.jp-Dialog')
    .getByRole('button', { name: 'Stop' })
    .click();
  await expect(row).toHaveCount(0, { timeout: 60000 });
});

test('plan a rank-table file on a topology file: given vs planned', async ({
  page,
  request
}) => {
  const fs = await import('fs');
  const topology = fs.readFileSync(
    path.resolve(
      __dirname,
      '..',
      '..',
      'tests',
      'data',
      'topology',
      'topology.yaml'
    ),
    'utf-8'
  );
  // six servers in a pod-index order that zig-zags across the leaves
  const order = [11, 13, 15, 12, 14, 16];
  const table = {
    status: 'completed',
    version: '1.0',
    server_count: String(order.length),
    server_list: order.map((n, i) => ({
      server_id: `192.168.0.${n}`,
      device: Array.from({ length: 8 }, (_, d) => ({
        device_id: String(d),
        device_ip: `10.${i}.0.${d}`,
        rank_id: String(i * 8 + d)
      }))
    }))
  };
  for (const [name, content] of [
    ['plans/topology.yaml', topology],
    ['plans/jobstart_hccl.json', JSON.stringify(table, null, 2)]
  ]) {
    await request.put('/api/contents/plans', { data: { type: 'directory' } });
    await request.put(`/api/contents/${name}`, {
      data: { type: 'file', format: 'text', content }
    });
  }
  await openPanel(page);
  await collapse(page, 'connections');
  await collapse(page, 'compose');
  await collapse(page, 'jobs');
  const layout = await expand(page, 'layout');
  await layout
    .locator('#jp-Ranktable-field-layout-topology')
    .fill('plans/topology.yaml');
  await layout
    .locator('#jp-Ranktable-field-layout-ranktable')
    .fill('plans/jobstart_hccl.json');
  await layout.getByRole('button', { name: 'Plan' }).click();
  await expect(layout.locator('.jp-Ranktable-svg svg')).toBeVisible({
    timeout: 60000
  });
  const speedup = await layout.locator('.jp-Ranktable-speedup').innerText();
  expect(Number(speedup.replace('×', ''))).toBeGreaterThan(1);
  await layout.locator('.jp-Ranktable-svg [data-server]').first().hover();
  await expect(layout.locator('.jp-Ranktable-hover')).toContainText('leaf');
  await shoot(layout, 'layout-plan');
});

test('template parameters mask secrets; saved versions roll back', async ({
  page
}) => {
  await openPanel(page);
  await collapse(page, 'connections');
  await collapse(page, 'jobs');
  const compose = await expand(page, 'compose');
  await compose.locator('#jp-Ranktable-field-name').fill('tpl-${suffix}');
  await compose.locator('#jp-Ranktable-field-image').fill('bert:v1');
  await compose.locator('#jp-Ranktable-field-nodes').fill('1');
  await compose.locator('#jp-Ranktable-field-command').fill('python train.py');
  await compose.locator('#jp-Ranktable-field-env').fill('API_TOKEN=${token}');
  // a ${param} without a value is reported on the fields using it
  await expect(
    compose.locator('[data-field="env"] .jp-Ranktable-fieldError')
  ).toContainText('${token}');
  await compose.locator('#jp-Ranktable-param-suffix').fill('a');
  const token = compose.locator('#jp-Ranktable-param-token');
  await compose.locator('[data-param="token"] input[type="checkbox"]').check();
  await expect(token).toHaveAttribute('type', 'password');
  await token.fill('s3cr3t-value');
  const yaml = compose.locator('.jp-Ranktable-pre');
  await expect(yaml).toContainText('name: tpl-a', { timeout: 20000 });
  await expect(yaml).toContainText('******');
  await expect(yaml).not.toContainText('s3cr3t-value');
  await shoot(compose, 'compose-template');

  await compose.getByRole('button', { name: 'Save version' }).click();
  await compose.locator('#jp-Ranktable-field-name').fill('changed');
  const versions = compose.locator('.jp-Ranktable-versions');
  await versions.locator('summary').click();
  await versions.getByRole('button', { name: 'Roll back' }).first().click();
  await expect(compose.locator('#jp-Ranktable-field-name')).toHaveValue(
    'tpl-${suffix}'
  );
});

test('open a notebook on the simulated instance and run code there', async ({
  page
}) => {
  test.setTimeout(240 * 1000);
  await openPanel(page);
  await collapse(page, 'connections');
  await collapse(page, 'compose');
  await collapse(page, 'jobs');
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

test('dark theme: the panel follows the theme variables', async ({ page }) => {
  await page.theme.setDarkTheme();
  await openPanel(page);
  await collapse(page, 'connections');
  await collapse(page, 'jobs');
  const compose = await expand(page, 'compose');
  await compose.locator('#jp-Ranktable-field-name').fill('Bad_Name');
  await compose.locator('#jp-Ranktable-field-image').fill('bert:v1');
  await expect(
    compose.locator('[data-field="name"] .jp-Ranktable-fieldError')
  ).toBeVisible({ timeout: 20000 });
  const background = await page
    .locator(`#${PANEL}`)
    .evaluate(el => getComputedStyle(el).backgroundColor);
  expect(background).not.toBe('rgb(255, 255, 255)');
  await shoot(compose, 'compose-dark');
  await page.theme.setLightTheme();
});
