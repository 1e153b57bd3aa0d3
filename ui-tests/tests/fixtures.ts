/**
 * Set-up shared by the browser tests (not a test file itself): the 1440x900 workspace page, the sidebar
 * at its default 250 px, jobs submitted through the REST API, and the docs/ screenshots taken only with
 * RANKTABLE_SCREENSHOTS=1 (`make screenshots`).
 */
import { expect, galata } from '@jupyterlab/galata';
import type { IJupyterLabPageFixture } from '@jupyterlab/galata';
import type {
  APIRequestContext,
  Locator,
  WorkerFixture
} from '@playwright/test';
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as readline from 'readline';

export const IMG = path.resolve(__dirname, '..', '..', 'docs', 'img');
export const STACK = path.resolve(__dirname, '..', '.stack');
export const PANEL = 'jp-ranktable-panel';
export const SHOTS = process.env.RANKTABLE_SCREENSHOTS === '1';

/** `test.use(...)` of the workspace (and hosted) tests: a 1440x900 page with JupyterLab's default settings. */
export const WORKSPACE_PAGE = {
  mockSettings: galata.DEFAULT_SETTINGS,
  viewport: { width: 1440, height: 900 }
};

/** A shell loop printing one "[rank N] TAG step I loss …" line every 0.2 s. */
export const LOOP = (tag: string): string =>
  `for i in $(seq 1 100000); do echo "[rank $((i % 16))] ${tag} step $i loss 0.$i"; sleep 0.2; done`;

/** Save a picture for docs/img (only under `make screenshots`). */
export async function shoot(
  target: IJupyterLabPageFixture | Locator,
  name: string
): Promise<void> {
  if (SHOTS) {
    await target.screenshot({ path: path.join(IMG, `${name}.png`) });
  }
}

/** Open the Ranktable sidebar at its default width; returns the panel. */
export async function openSidebar(
  page: IJupyterLabPageFixture
): Promise<Locator> {
  await page.sidebar.openTab(PANEL);
  await page.sidebar.setWidth(250, 'left');
  const panel = page.locator(`#${PANEL}`);
  await expect(panel.locator('[data-section="jobs"]')).toBeVisible();
  return panel;
}

/** The demo training script (`examples/train.py`): steps, losses, saves and failures on demand. */
export const TRAIN = path.resolve(
  __dirname,
  '..',
  '..',
  'examples',
  'train.py'
);

/** Submit a job spec (201 expected), 2 pods x 8 NPUs of the demo image unless `spec` says otherwise;
 * returns the run. */
export async function submitSpec(
  request: APIRequestContext,
  spec: Record<string, unknown>
): Promise<{ uid: string }> {
  const response = await request.post('/ranktable/jobs', {
    data: {
      spec: {
        image: 'bert_pretrain_mindspore:v1',
        nodes: 2,
        npus_per_node: 8,
        ...spec
      }
    }
  });
  expect(response.status(), await response.text()).toBe(201);
  return response.json();
}

/** Submit a job running `script` on `nodes` pods (201 expected); returns the run. */
export async function submit(
  request: APIRequestContext,
  name: string,
  script: string,
  nodes = 2
): Promise<{ uid: string }> {
  return submitSpec(request, {
    name,
    nodes,
    command: ['/bin/bash', '-c', script]
  });
}

/** Stop a job through the REST API and wait until it is gone (404). */
export async function stopAndWait(
  request: APIRequestContext,
  name: string
): Promise<void> {
  await request.delete(`/ranktable/jobs/default/${name}`);
  await expect
    .poll(
      async () =>
        (await request.get(`/ranktable/jobs/default/${name}`)).status(),
      { timeout: 60000 }
    )
    .toBe(404);
}

/**
 * Stop every job on the pool: a spec whose pictures or empty states assume only its own jobs starts
 * with this, so a job an earlier failed spec left running cannot change what it sees.
 */
export async function stopAll(request: APIRequestContext): Promise<void> {
  const listed = await (await request.get('/ranktable/jobs')).json();
  for (const job of listed.jobs as { name: string }[]) {
    await stopAndWait(request, job.name);
  }
  expect((await (await request.get('/ranktable/jobs')).json()).jobs).toEqual(
    []
  );
}

/** The test pool's topology file (tests/data/topology/topology.yaml): 2 leaves of 3 servers. */
export function testTopology(): string {
  return fs.readFileSync(
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
}

/** A completed rank table of six 8-NPU servers in a pod-index order that zig-zags across the leaves. */
export function zigzagRankTable(): Record<string, unknown> {
  const order = [11, 13, 15, 12, 14, 16];
  return {
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
}

/** Run a stack script of ui-tests/ (`hosted_stack.py`, `hub_stack.py`) around `use`: its first stdout line
 * is JSON saying where it serves; SIGTERM ends it afterwards. */
export async function withStack<T>(
  script: string,
  use: (served: T) => Promise<void>
): Promise<void> {
  const child: ChildProcess = spawn(
    'python',
    [path.resolve(__dirname, '..', script)],
    { stdio: ['ignore', 'pipe', 'inherit'] }
  );
  const first = await new Promise<string>((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout! });
    lines.once('line', resolve);
    child.once('exit', code => reject(new Error(`${script} exited (${code})`)));
  });
  await use(JSON.parse(first) as T);
  child.kill('SIGTERM');
  await new Promise(resolve => child.once('exit', resolve));
}

/** Where `hosted_stack.py` serves: JupyterLab under its base_url behind the proxy (`url`), the proxy's
 * switch (`control`: POST `allow` or `block` websockets), JupyterLab itself (`lab`) and its switch
 * (`server`: POST `kill`, SIGKILL, or `start`, same port and state, answering once it serves). */
export interface IHostedStack {
  url: string;
  control: string;
  lab: string;
  server: string;
}

/** The worker fixture serving `hosted_stack.py` for one test file:
 * `base.extend<object, { hosted: IHostedStack }>({ hosted: hostedStack() })`. A new function each call,
 * so that each file gets its own stack (Playwright shares a worker between files with the same one). */
export function hostedStack(): [
  WorkerFixture<IHostedStack, object>,
  { scope: 'worker'; timeout: number }
] {
  return [
    async ({}, use) => {
      await withStack<IHostedStack>('hosted_stack.py', use);
    },
    { scope: 'worker', timeout: 240 * 1000 }
  ];
}
