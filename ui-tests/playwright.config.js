/**
 * Galata's base configuration, run in Debian's chromium (browsers are never downloaded here) against
 * the demo stack on a free port: the simulated pool, the simulated Notebook instance and JupyterLab with the extension.
 */
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');
const { execFileSync } = require('child_process');

/**
 * A free port, chosen once in the runner process and inherited by its workers through the environment
 * (UI_TEST_PORT set by hand wins).
 */
function freePort() {
  if (!process.env.UI_TEST_PORT) {
    process.env.UI_TEST_PORT = execFileSync('python', [
      '-c',
      'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    ])
      .toString()
      .trim();
  }
  return process.env.UI_TEST_PORT;
}
const PORT = freePort();

const chromiumArgs = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-dev-shm-usage'
];

module.exports = {
  ...baseConfig,
  testDir: './tests',
  outputDir: './test-results',
  timeout: 180 * 1000,
  retries: 0,
  workers: 1,
  reporter: [['list']],
  use: {
    ...baseConfig.use,
    baseURL: `http://127.0.0.1:${PORT}`,
    viewport: { width: 1400, height: 2200 },
    trace: 'retain-on-failure',
    video: 'off',
    launchOptions: { executablePath: '/usr/bin/chromium', args: chromiumArgs }
  },
  webServer: {
    command: `python -m ranktable.server_ext.demo --no-browser --port ${PORT} --home ./.stack --fresh --test-config ./jupyter_server_test_config.py`,
    url: `http://127.0.0.1:${PORT}/lab`,
    timeout: 180 * 1000,
    reuseExistingServer: !process.env.CI,
    gracefulShutdown: { signal: 'SIGTERM', timeout: 20000 },
    stdout: 'pipe'
  }
};
