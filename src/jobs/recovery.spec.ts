import { requestAPI } from '../api/request';
import { notifyRecovery } from './notify';
import { RecoveryModel } from './recovery';

const emitted: [string, string][] = [];
jest.mock('@jupyterlab/apputils', () => ({
  Notification: {
    emit: (text: string, kind: string) => {
      emitted.push([text, kind]);
      return 'id';
    }
  }
}));
jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));

// TranslationBundle.__ without JupyterLab's ESM packages (jest runs CommonJS): %1, %2... filled in order
const trans = {
  __: (text: string, ...args: unknown[]) =>
    args.reduce<string>(
      (out, arg, i) => out.replace(`%${i + 1}`, String(arg)),
      text
    )
};

const decision = (action: string, at: number, extra: object = {}) => ({
  namespace: 'default',
  job: 'heal',
  run: 'old-uid',
  action,
  message: 'the server’s whole line',
  at,
  ...extra
});

describe('auto-resume notifications', () => {
  it('asks for what is new since the last decision and toasts resumed and over-budget ones only', async () => {
    const api = requestAPI as jest.Mock;
    api.mockResolvedValueOnce({
      enabled: true,
      budget: 3,
      events: [
        decision('resumed', 2e9, {
          new_run: 'new-uid',
          checkpoint: { step: 1200, path: '/ckpt' },
          avoided: ['node-5']
        }),
        decision('skipped', 2e9 + 1),
        decision('budget', 2e9 + 2)
      ]
    });
    const recovery = new RecoveryModel();
    const opened: string[] = [];
    notifyRecovery(recovery, trans as any, run => opened.push(run.uid));
    await Promise.resolve();
    await Promise.resolve();
    expect(emitted).toEqual([
      [
        'Job heal resumed by itself from checkpoint 1200, without node-5',
        'success'
      ],
      [
        'Job heal failed again: not resumed, its auto-resume budget is spent',
        'warning'
      ]
    ]);
    api.mockResolvedValueOnce({ enabled: true, budget: 3, events: [] });
    await recovery.poll();
    expect(String(api.mock.calls[1][0])).toContain(`since=${2e9 + 2}`);
    recovery.dispose();
  });
});
