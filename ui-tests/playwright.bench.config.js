/**
 * The log-view benchmark (bench/bench_logview.spec.ts) on a simulated pool of BENCH_PODS nodes (64 by default),
 * none held by other tenants (the simulator's default holds one node in 8, and a job on every node would wait).
 */
const base = require('./playwright.config');
const PORT = process.env.UI_TEST_PORT;
const NODES = Number(process.env.BENCH_PODS ?? 64);
const LEAVES = Math.max(2, Math.ceil(NODES / 8));

module.exports = {
  ...base,
  testDir: '../bench',
  testMatch: 'bench_logview.spec.ts',
  outputDir: './test-results-bench', // not the suite's: Playwright empties its output folder at start
  timeout: 1500 * 1000,
  use: {
    ...base.use,
    baseURL: `http://127.0.0.1:${PORT}`,
    viewport: { width: 1600, height: 1000 }
  },
  webServer: {
    ...base.webServer,
    command: `python -m ranktable.server_ext.demo --no-browser --port ${PORT} --nodes ${NODES} --leaves ${LEAVES} --tenants 0 --home ./.stack-bench --fresh --test-config ./jupyter_server_test_config.py`,
    url: `http://127.0.0.1:${PORT}/lab`,
    timeout: 900 * 1000
  }
};
