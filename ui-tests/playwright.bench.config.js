/** The log-view benchmark (bench/bench_logview.spec.ts) on a 64-node simulated pool. */
const base = require('./playwright.config');
const PORT = process.env.UI_TEST_PORT;

module.exports = {
  ...base,
  testDir: '../bench',
  testMatch: 'bench_logview.spec.ts',
  timeout: 600 * 1000,
  use: {
    ...base.use,
    baseURL: `http://127.0.0.1:${PORT}`,
    viewport: { width: 1600, height: 1000 }
  },
  webServer: {
    ...base.webServer,
    command: `python -m ranktable.server_ext.demo --no-browser --port ${PORT} --nodes 64 --leaves 8 --home ./.stack-bench --fresh --test-config ./jupyter_server_test_config.py`,
    url: `http://127.0.0.1:${PORT}/lab`
  }
};
