/**
 * Log view under load: a 64-pod job on the simulated pool printing 2,000 lines/s in total, followed live
 * in its Job view (main area, full width) for 60 s; also the time from opening the Job view to its first
 * lines. Measures frame times (requestAnimationFrame deltas, long tasks), the
 * JS heap over time and the lines delivered over the websocket; prints one JSON line of figures.
 * Run through `python bench/bench_logview.py` (it starts the stack and prints the summary).
 */
import { expect, test } from '@jupyterlab/galata';

const PODS = Number(process.env.BENCH_PODS ?? 64);
const RATE = Number(process.env.BENCH_RATE ?? 2000); // lines per second, all pods together
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const JOB = 'logbench';

test('log view: 64 pods x 2,000 lines/s for 60 s', async ({
  page,
  request
}) => {
  test.setTimeout((SECONDS + 240) * 1000);
  const perPod = RATE / PODS;
  const script = [
    'import sys, time',
    `n, dt = int(${perPod} * (${SECONDS} + 60)), 1.0 / ${perPod}`,
    'start = time.monotonic()',
    'for i in range(n):',
    '    print(f"step {i} loss {1.0 / (i + 1):.6f} throughput 1234.5 samples/s" + ("  RuntimeError: HCCL timeout" if i % 500 == 499 else ""), flush=True)',
    '    time.sleep(max(0.0, start + (i + 1) * dt - time.monotonic()))'
  ].join('\n');
  const spec = {
    name: JOB,
    image: 'bench:v1',
    nodes: PODS,
    npus_per_node: 8,
    command: ['python3', '-c', script]
  };
  const submitted = await request.post('/ranktable/jobs', { data: { spec } });
  expect(submitted.status(), await submitted.text()).toBe(201);

  // count log lines as the page receives them (the stream socket opens at start-up, so wrap it first)
  await page.addInitScript(() => {
    const w = window as any;
    const Native = w.WebSocket;
    w.__rtLines = 0;
    w.WebSocket = class extends Native {
      constructor(url: string, protocols?: string | string[]) {
        super(url, protocols);
        this.addEventListener('message', (e: MessageEvent) => {
          if (typeof e.data === 'string' && e.data.includes('"lines"')) {
            try {
              w.__rtLines += JSON.parse(e.data).data.lines.length;
            } catch {
              /* not a log batch */
            }
          }
        });
      }
    };
  });
  await page.reload();
  const wsLines = () =>
    page.evaluate(() => (window as any).__rtLines as number);

  await page.sidebar.openTab('jp-ranktable-panel');
  const row = page.locator(`.jp-Ranktable-jobRow[data-job="${JOB}"]`);
  await expect(row).toHaveAttribute('data-phase', 'Running', {
    timeout: 180000
  });
  const opened = Date.now();
  await row.click();
  const view = page.locator('.jp-Ranktable-jobView').last();
  await expect(view.locator('.jp-Ranktable-logLine').first()).toBeVisible({
    timeout: 120000
  });
  const firstLinesMs = Date.now() - opened;
  const status = view.locator('.jp-Ranktable-logStatus');
  await expect(status).toContainText(`${PODS} pods`, { timeout: 120000 });

  const cdp = await page.context().newCDPSession((page as any).page ?? page);
  await cdp.send('Performance.enable');
  const heap = async () => {
    const { metrics } = await cdp.send('Performance.getMetrics');
    return metrics.find(m => m.name === 'JSHeapUsedSize')?.value ?? 0;
  };
  await page.evaluate(() => {
    const w = window as any;
    w.__frames = [];
    w.__longTasks = 0;
    let last = performance.now();
    const tick = (now: number) => {
      w.__frames.push(now - last);
      last = now;
      w.__raf = requestAnimationFrame(tick);
    };
    w.__raf = requestAnimationFrame(tick);
    new PerformanceObserver(list => {
      w.__longTasks += list.getEntries().length;
    }).observe({ entryTypes: ['longtask'] });
  });
  const linesAtStart = await wsLines();
  const heapSamples: number[] = [];
  for (let t = 0; t < SECONDS; t += 5) {
    heapSamples.push(await heap());
    await page.waitForTimeout(5000);
  }
  heapSamples.push(await heap());
  const linesDelivered = (await wsLines()) - linesAtStart;
  const frames: number[] = await page.evaluate(() => {
    const w = window as any;
    cancelAnimationFrame(w.__raf);
    return w.__frames.slice(1);
  });
  const longTasks: number = await page.evaluate(
    () => (window as any).__longTasks
  );
  const kept = await status.innerText();
  const sorted = [...frames].sort((a, b) => a - b);
  const pct = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  const figures = {
    pods: PODS,
    target_lines_per_second: RATE,
    seconds: SECONDS,
    lines_per_second_delivered: Math.round(linesDelivered / SECONDS),
    frames: frames.length,
    fps: Math.round(frames.length / SECONDS),
    fps_median: Number((1000 / pct(0.5)).toFixed(1)),
    first_lines_ms: firstLinesMs,
    frame_ms_p50: Number(pct(0.5).toFixed(1)),
    frame_ms_p95: Number(pct(0.95).toFixed(1)),
    frame_ms_p99: Number(pct(0.99).toFixed(1)),
    frame_ms_max: Number(sorted[sorted.length - 1].toFixed(1)),
    long_tasks: longTasks,
    heap_mb_start: Number((heapSamples[0] / 1e6).toFixed(1)),
    heap_mb_end: Number((heapSamples[heapSamples.length - 1] / 1e6).toFixed(1)),
    heap_mb_max: Number((Math.max(...heapSamples) / 1e6).toFixed(1)),
    view_status: kept.replace(/\s+/g, ' ')
  };
  console.log('BENCH_LOGVIEW ' + JSON.stringify(figures));
  await request.delete(`/ranktable/jobs/default/${JOB}`);
});
