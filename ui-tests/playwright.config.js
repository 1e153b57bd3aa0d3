/**
 * Galata's base configuration, run in Debian's chromium (browsers are never downloaded here) against
 * `jlpm start`: the simulated pool, the simulated Notebook instance and JupyterLab with the extension.
 */
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

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
    baseURL: 'http://127.0.0.1:18888',
    viewport: { width: 1400, height: 2200 },
    trace: 'retain-on-failure',
    video: 'off',
    launchOptions: { executablePath: '/usr/bin/chromium', args: chromiumArgs }
  },
  webServer: {
    command: 'jlpm start',
    url: 'http://127.0.0.1:18888/lab',
    timeout: 180 * 1000,
    reuseExistingServer: !process.env.CI,
    gracefulShutdown: { signal: 'SIGTERM', timeout: 20000 },
    stdout: 'pipe'
  }
};
