/**
 * The remote panel parts in a real JupyterLab (Debian chromium) against simulated Notebook instances, in the
 * sidebar at 250 px and a 1440x900 window: port forwards (open in a new tab, close; one opened by the CLI in
 * another process, listed with its pid and closed from the panel), a recreated instance's
 * new host key (both fingerprints, trusted only once typed), and remote kernels left running by a previous
 * server (attach, shut down). Each step also checks that nothing in the section is clipped or overlaps.
 * Screenshots go to the test's output folder; to docs/img only with RANKTABLE_SCREENSHOTS=1.
 */
import { expect, galata, test } from '@jupyterlab/galata';
import type { IJupyterLabPageFixture as Page } from '@jupyterlab/galata';
import type { APIRequestContext, Locator } from '@playwright/test';
import { ChildProcess, execFileSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';

const IMG = path.resolve(__dirname, '..', '..', 'docs', 'img');
const STACK = path.resolve(__dirname, '..', '.stack');
const PANEL = 'jp-ranktable-panel';
const SHOTS = process.env.RANKTABLE_SCREENSHOTS === '1';
/** The simulated instance runs commands locally: its "remote" Python is this checkout's venv. */
const PYTHON =
  process.env.RANKTABLE_TEST_PYTHON ??
  path.resolve(__dirname, '..', '..', '.venv', 'bin', 'python');
const TITLES: Record<string, string> = {
  connections: 'Connections',
  kernels: 'Remote kernels',
  forwards: 'Port forwards'
};

test.use({
  autoGoto: true,
  mockSettings: galata.DEFAULT_SETTINGS,
  viewport: { width: 1440, height: 900 }
});
test.describe.configure({ mode: 'serial' });

async function section(page: Page, id: string): Promise<Locator> {
  await page.sidebar.openTab(PANEL);
  await page.sidebar.setWidth(250, 'left');
  const titles = page.locator(`#${PANEL} .jp-AccordionPanel-title`);
  for (const [other, label] of Object.entries(TITLES)) {
    const title = titles.filter({ hasText: label });
    const open = (await title.getAttribute('aria-expanded')) === 'true';
    if (open !== (other === id)) {
      await title.click();
    }
  }
  const body = page.locator(`#${PANEL} [data-section="${id}"]`);
  await expect(body).toBeVisible();
  return body;
}

/** Nothing sticks out of the section sideways, and no two buttons of a row overlap. */
async function expectLaidOut(s: Locator): Promise<void> {
  const problems = await s.evaluate((root: HTMLElement) => {
    const found: string[] = [];
    const box = root.getBoundingClientRect();
    if (root.scrollWidth > root.clientWidth + 1) {
      found.push(`scrolls sideways: ${root.scrollWidth} > ${root.clientWidth}`);
    }
    const name = (el: Element) =>
      `${el.tagName.toLowerCase()}.${el.className} "${(el.textContent ?? '').slice(0, 30)}"`;
    for (const el of Array.from(root.querySelectorAll('*'))) {
      const r = el.getBoundingClientRect();
      if (r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1)) {
        found.push(
          `${name(el)} at ${r.left}..${r.right} outside ${box.left}..${box.right}`
        );
      }
    }
    for (const button of Array.from(root.querySelectorAll('button'))) {
      const r = button.getBoundingClientRect();
      if (r.height === 0) {
        continue;
      }
      if (button.scrollHeight > button.clientHeight + 1) {
        found.push(
          `${name(button)}: its label spills out (${button.scrollHeight} > ${button.clientHeight})`
        );
      }
      if (r.top < box.top - 1 || r.bottom > box.bottom + 1) {
        found.push(
          `${name(button)} at ${r.top}..${r.bottom} outside ${box.top}..${box.bottom}`
        );
      }
    }
    for (const row of Array.from(
      root.querySelectorAll('.jp-Ranktable-actions')
    )) {
      const kids = Array.from(row.children).map(k => k.getBoundingClientRect());
      kids.forEach((a, i) =>
        kids.slice(i + 1).forEach(b => {
          if (
            a.left < b.right - 1 &&
            b.left < a.right - 1 &&
            a.top < b.bottom - 1 &&
            b.top < a.bottom - 1
          ) {
            found.push(`overlapping buttons in ${name(row)}`);
          }
        })
      );
    }
    return found;
  });
  expect(problems).toEqual([]);
}

/** The button's label is one line: its box is no taller than one line of text plus its padding. */
async function expectOneLine(button: Locator): Promise<void> {
  const [height, oneLine] = await button.evaluate((b: HTMLElement) => {
    const cs = getComputedStyle(b);
    const px = (v: string) => parseFloat(v) || 0;
    const line = px(cs.lineHeight) || px(cs.fontSize) * 1.3;
    const chrome =
      px(cs.paddingTop) +
      px(cs.paddingBottom) +
      px(cs.borderTopWidth) +
      px(cs.borderBottomWidth);
    return [
      b.getBoundingClientRect().height,
      Math.max(px(cs.minHeight), line + chrome)
    ];
  });
  expect(height).toBeLessThanOrEqual(oneLine + 1);
}

/** `inner` lies inside `outer`'s box (1 px tolerance). */
async function expectInside(inner: Locator, outer: Locator): Promise<void> {
  const a = (await inner.boundingBox())!;
  const b = (await outer.boundingBox())!;
  expect(a.x).toBeGreaterThanOrEqual(b.x - 1);
  expect(a.y).toBeGreaterThanOrEqual(b.y - 1);
  expect(a.x + a.width).toBeLessThanOrEqual(b.x + b.width + 1);
  expect(a.y + a.height).toBeLessThanOrEqual(b.y + b.height + 1);
}

async function shoot(page: Page, name: string): Promise<void> {
  const file = SHOTS
    ? path.join(IMG, `${name}.png`)
    : test.info().outputPath(`${name}.png`);
  await page.screenshot({ path: file });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

/** A web app "on the instance" (the simulated one forwards to its loopback), e.g. TensorBoard. */
/** The forwards the server lists (this process's and other processes'). */
async function listForwards(
  request: APIRequestContext
): Promise<Record<string, any>[]> {
  return (await (await request.get('/ranktable/forwards')).json()).forwards;
}

/** The server's one forward, checked to match `expected`. */
async function theOneForward(
  request: APIRequestContext,
  expected: Record<string, unknown>
): Promise<Record<string, any>> {
  const listed = await listForwards(request);
  expect(listed).toHaveLength(1);
  expect(listed[0]).toMatchObject(expected);
  return listed[0];
}

async function webApp(text: string): Promise<http.Server> {
  const server = http.createServer((_, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(`<html><body><h1>${text}</h1></body></html>`);
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  return server;
}

function get(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(url, res => {
        let body = '';
        res.on('data', chunk => (body += chunk));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

/** `ranktable sim notebook` with its own RANKTABLE_HOME (so its own host key), until it listens. */
async function startInstance(
  home: string,
  port: number
): Promise<ChildProcess> {
  const proc = spawn(
    PYTHON,
    [
      '-m',
      'ranktable',
      'sim',
      'notebook',
      '--port',
      String(port),
      '--name',
      'recreated'
    ],
    {
      env: { ...process.env, RANKTABLE_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe']
    }
  );
  let out = '';
  proc.stdout!.on('data', chunk => (out += chunk));
  proc.stderr!.on('data', chunk => (out += chunk));
  await expect
    .poll(() => (proc.exitCode === null ? out.includes('registered') : out), {
      timeout: 60000
    })
    .toBe(true);
  return proc;
}

async function stopInstance(proc: ChildProcess): Promise<void> {
  if (proc.exitCode === null) {
    const exited = new Promise(resolve => proc.once('exit', resolve));
    proc.kill('SIGTERM');
    await exited;
  }
}

/** The SHA256 fingerprint OpenSSH's own ssh-keygen computes for a public key file. */
function sshKeygenFingerprint(pub: string): string {
  const line = execFileSync('ssh-keygen', [
    '-l',
    '-E',
    'sha256',
    '-f',
    pub
  ]).toString();
  return line.split(/\s+/)[1];
}

async function testProfile(
  request: APIRequestContext,
  name: string,
  body: Record<string, string> = {}
): Promise<any> {
  const response = await request.post(`/ranktable/profiles/${name}/test`, {
    data: body
  });
  expect(response.status(), await response.text()).toBe(200);
  return response.json();
}

async function kernelIds(request: APIRequestContext): Promise<string[]> {
  return (await (await request.get('/api/kernels')).json()).map(
    (k: any) => k.id
  );
}

test('forward a port of the instance: open it in a new tab, then close it', async ({
  page,
  request,
  context
}) => {
  const app = await webApp('TensorBoard on the instance');
  const remotePort = (app.address() as net.AddressInfo).port;
  try {
    const s = await section(page, 'forwards');
    await expect(s.locator('.jp-Ranktable-empty')).toHaveText(
      'No port forwards open.'
    );
    const port = s.locator('#jp-Ranktable-field-forward-port');
    const submit = s.getByRole('button', { name: 'Forward port' });
    // a bad port names the field and the limit, and opens nothing
    await port.fill('70000');
    await submit.click();
    await expect(s.locator('.jp-Ranktable-fieldError')).toContainText(
      '1 to 65535'
    );
    expect(await listForwards(request)).toEqual([]);

    await s
      .locator('#jp-Ranktable-field-forward-profile')
      .selectOption('sim-notebook');
    await port.fill(String(remotePort));
    await submit.click();
    const row = s.locator('.jp-Ranktable-forward', {
      hasText: `port ${remotePort}`
    });
    await expect(row).toBeVisible({ timeout: 30000 });
    await expect(s.locator('.jp-Ranktable-fieldError')).toHaveCount(0);
    await expect(row).toContainText('sim-notebook');
    const link = row.getByRole('link', { name: 'Open' });
    const href = (await link.getAttribute('href'))!;
    // the server's authenticated proxy path, never a 127.0.0.1 port other local users could reach
    expect(href).toMatch(/\/ranktable\/forwards\/fwd-\d+\/proxy\/$/);
    expect(new URL(href).origin).toBe(new URL(page.url()).origin); // JupyterLab's own
    await expect(row.locator('.jp-Ranktable-forwardUrl')).toHaveText(href);
    await expect(link).toHaveAttribute('target', '_blank');
    const forward = await theOneForward(request, {
      profile: 'sim-notebook',
      remote_port: remotePort,
      bind: 'unix'
    });
    expect(href.endsWith(forward.proxy_path)).toBe(true);

    const [tab] = await Promise.all([
      context.waitForEvent('page'),
      link.click()
    ]);
    await expect(tab.locator('h1')).toHaveText('TensorBoard on the instance');
    await tab.close();
    await expectLaidOut(s);
    await shoot(page, 'forwards');

    await row.getByRole('button', { name: 'Close' }).click();
    await expect(row).toHaveCount(0);
    expect(await listForwards(request)).toEqual([]);
    expect((await request.get(href)).status()).toBe(404);
  } finally {
    app.close();
  }
});

/** `ranktable ssh forward sim-notebook PORT` in its own process, sharing the demo's RANKTABLE_HOME (the
 * registry the panel lists); resolves with the process and its local URL once it forwards. */
async function forwardFromCli(
  remotePort: number
): Promise<{ proc: ChildProcess; url: string; output: () => string }> {
  const proc = spawn(
    PYTHON,
    ['-m', 'ranktable', 'ssh', 'forward', 'sim-notebook', String(remotePort)],
    {
      env: { ...process.env, RANKTABLE_HOME: STACK, RANKTABLE_AGENT: '0' },
      stdio: ['ignore', 'pipe', 'pipe']
    }
  );
  let out = '';
  proc.stdout!.on('data', chunk => (out += chunk));
  proc.stderr!.on('data', chunk => (out += chunk));
  await expect
    .poll(() => (proc.exitCode === null ? /forwarding http/.test(out) : out), {
      timeout: 60000
    })
    .toBe(true);
  const url = /forwarding (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out)![1];
  return { proc, url, output: () => out };
}

test('a forward opened by another process (the CLI): listed with its owner, closed from the panel', async ({
  page,
  request
}) => {
  const app = await webApp('A web app forwarded by the CLI');
  const remotePort = (app.address() as net.AddressInfo).port;
  let cli: ChildProcess | undefined;
  try {
    const started = await forwardFromCli(remotePort);
    cli = started.proc;
    const { url } = started;
    expect(await get(url)).toContain('A web app forwarded by the CLI');

    const s = await section(page, 'forwards');
    const row = s.locator('.jp-Ranktable-forward', {
      hasText: `port ${remotePort}`
    });
    await expect(row).toBeVisible({ timeout: 30000 }); // the panel refreshes its list by itself
    await expect(row).toContainText('sim-notebook');
    await expect(row).toContainText(`(another process, pid ${cli.pid})`);
    await expect(row.locator('.jp-Ranktable-forwardUrl')).toHaveText(url);
    await expect(row.getByRole('link', { name: 'Open' })).toHaveAttribute(
      'href',
      url
    );
    const forward = await theOneForward(request, {
      profile: 'sim-notebook',
      remote_port: remotePort,
      url,
      owner: 'another process',
      pid: cli.pid
    });
    expect(forward.id).toMatch(new RegExp(`^fwd-\\d+@${cli.pid}$`));
    await expect(row).toHaveAttribute('data-forward', forward.id);
    await expectLaidOut(s);

    // Close asks the owning process: it stops forwarding (and, being the CLI, exits) and the row goes
    const exited = new Promise<number | null>(resolve =>
      cli!.exitCode !== null
        ? resolve(cli!.exitCode)
        : cli!.once('exit', code => resolve(code))
    );
    await row.getByRole('button', { name: 'Close' }).click();
    await expect(row).toHaveCount(0);
    expect(await exited).toBe(0);
    expect(started.output()).toContain('forward closed from another process');
    await expect(get(url)).rejects.toThrow(/ECONNREFUSED/);
    expect(await listForwards(request)).toEqual([]);
  } finally {
    if (cli && cli.exitCode === null) {
      cli.kill('SIGTERM');
    }
    app.close();
  }
});

test('a recreated instance: both fingerprints shown, the new key trusted only once typed', async ({
  page,
  request
}) => {
  test.setTimeout(240 * 1000);
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'rt-recreated-'));
  const keys = path.join(home, 'sim-notebook');
  const port = await freePort();
  let instance = await startInstance(home, port);
  try {
    const sim = (
      await (await request.get('/ranktable/profiles')).json()
    ).profiles.find((p: any) => p.name === 'sim-notebook');
    const created = await request.post('/ranktable/profiles', {
      data: {
        name: 'recreated',
        host: '127.0.0.1',
        port,
        user: sim.user,
        key_file: path.join(keys, 'sim-notebook.pem'),
        remote_dir: path.join(home, 'sim-notebook', 'home', sim.user, 'work')
      }
    });
    expect(created.status(), await created.text()).toBe(201);
    const first = await testProfile(request, 'recreated');
    expect(first.status).toBe('unknown-host-key');
    const oldKey = sshKeygenFingerprint(
      path.join(keys, 'ssh_host_ed25519_key.pub')
    );
    expect(first.fingerprint).toBe(oldKey);
    expect(
      (await testProfile(request, 'recreated', { accept_host_key: oldKey }))
        .status
    ).toBe('ok');

    // the instance is recreated: same address, a new host key
    await stopInstance(instance);
    fs.rmSync(path.join(keys, 'ssh_host_ed25519_key'));
    fs.rmSync(path.join(keys, 'ssh_host_ed25519_key.pub'));
    instance = await startInstance(home, port);
    const newKey = sshKeygenFingerprint(
      path.join(keys, 'ssh_host_ed25519_key.pub')
    );
    expect(newKey).not.toBe(oldKey);

    await page.reload(); // the sidebar lists the profiles it found when it opened
    const s = await section(page, 'connections');
    const row = s.locator('[data-profile="recreated"]');
    await row.getByRole('button', { name: 'Test' }).click();
    const changed = row.locator('.jp-Ranktable-hostKeyChanged');
    await expect(changed).toBeVisible({ timeout: 30000 });
    await expect(row.locator('.jp-Ranktable-badge')).toHaveText('key changed');
    await expect(changed.locator('[data-fingerprint="recorded"]')).toHaveText(
      oldKey
    );
    await expect(
      changed.locator('[data-fingerprint="presented"]')
    ).toContainText(newKey);
    // refused, and still refused: nothing was replaced by showing it
    expect((await testProfile(request, 'recreated')).status).toBe(
      'host-key-changed'
    );

    const recreated = changed.getByRole('button', {
      name: /The instance was recreated/
    });
    // the accordion's section (its visible, scrolling box), not only the body that grows with its content
    const visible = page.locator('#jp-Ranktable-section-connections');
    await expectInside(recreated, changed);
    await expectInside(recreated, visible);
    await expectLaidOut(s);
    await shoot(page, 'host-key-recreated');
    await recreated.click();
    const input = changed.getByRole('textbox');
    const trust = changed.getByRole('button', { name: 'Trust the new key' });
    await expect(trust).toBeDisabled();
    await input.fill(oldKey);
    await expect(trust).toBeDisabled();
    await expect(changed.locator('.jp-Ranktable-fieldError')).toContainText(
      'does not match'
    );
    await input.fill(newKey.slice(0, -3));
    await expect(trust).toBeDisabled();
    expect((await testProfile(request, 'recreated')).status).toBe(
      'host-key-changed'
    );
    await input.fill(`ED25519 ${newKey}`); // pasted with its key type, as ssh-keygen -l prints it
    await expect(trust).toBeEnabled();
    await expectInside(trust, changed);
    await expectInside(trust, visible);
    await expectInside(
      changed.getByRole('button', { name: 'Cancel' }),
      visible
    );
    await expectLaidOut(s);
    await shoot(page, 'host-key-changed');

    await trust.click();
    await expect(row.locator('.jp-Ranktable-badge')).toHaveText('connected', {
      timeout: 30000
    });
    await expect(changed).toHaveCount(0);
    expect((await testProfile(request, 'recreated')).status).toBe('ok');
  } finally {
    await stopInstance(instance);
    await request.delete('/ranktable/profiles/recreated');
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('a remote kernel left running by a previous server: attach it, then shut it down', async ({
  page,
  request
}) => {
  test.setTimeout(240 * 1000);
  const kernelId = execFileSync(
    PYTHON,
    [
      path.resolve(__dirname, '..', 'detached_kernel.py'),
      'sim-notebook',
      PYTHON
    ],
    {
      env: {
        ...process.env,
        RANKTABLE_HOME: STACK,
        JUPYTER_DATA_DIR: path.join(STACK, 'jupyter-data')
      },
      timeout: 120 * 1000
    }
  )
    .toString()
    .trim()
    .split('\n')
    .pop()!;
  expect(await kernelIds(request)).not.toContain(kernelId);

  const s = await section(page, 'kernels');
  const row = s.locator(`[data-kernel="${kernelId}"]`);
  await expect(row).toHaveAttribute('data-attached', 'false', {
    timeout: 15000
  });
  await expect(row.locator('.jp-Ranktable-badge')).toHaveText('detached');
  const openButtons = s.getByRole('button', { name: /^Open a notebook on / });
  expect(await openButtons.count()).toBeGreaterThan(0);
  for (const button of await openButtons.all()) {
    await expectOneLine(button);
    await expectInside(button, s);
    await expectInside(button, page.locator('#jp-Ranktable-section-kernels'));
  }
  const listed = (
    await (await request.get('/ranktable/remote-kernels')).json()
  ).kernels.find((k: any) => k.kernel_id === kernelId);
  expect(listed).toMatchObject({ profile: 'sim-notebook', attached: false });
  const pid: number = listed.pid;
  expect(() => process.kill(pid, 0)).not.toThrow(); // the instance is this machine: the kernel runs
  await expectLaidOut(s);
  await shoot(page, 'remote-kernels');

  await row.getByRole('button', { name: 'Attach' }).click();
  await expect(row).toHaveAttribute('data-attached', 'true', {
    timeout: 60000
  });
  await expect(row.getByRole('button', { name: 'Attach' })).toHaveCount(0);
  expect(await kernelIds(request)).toContain(kernelId);

  await row.getByRole('button', { name: 'Shut down' }).click();
  await expect(row).toHaveCount(0, { timeout: 60000 });
  await expect
    .poll(() => kernelIds(request), { timeout: 60000 })
    .not.toContain(kernelId);
  await expect
    .poll(
      () => {
        try {
          process.kill(pid, 0);
          return 'running';
        } catch {
          return 'gone';
        }
      },
      { timeout: 30000 }
    )
    .toBe('gone');
});
