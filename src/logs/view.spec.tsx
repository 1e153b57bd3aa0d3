/**
 * @jest-environment jsdom
 */
import * as React from 'react';
import { act } from 'react';
import { createRoot } from 'react-dom/client';

import { LogView } from './view';
import { logMessage, trans } from '../testing/fakes';
import { followedLogs } from '../testing/logs';

jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

describe('LogView', () => {
  it('shows each line with its node rank and pod, marks errors and search matches, and filters by node rank', () => {
    const { stream, logs } = followedLogs();
    const host = document.createElement('div');
    act(() => createRoot(host).render(<LogView model={logs} trans={trans} />));
    act(() =>
      stream.last().handlers.onData(
        logMessage([
          { pod: 'bert-0', rank: 0, ts: '1', text: 'step 1 loss 2.5' },
          {
            pod: 'bert-1',
            rank: 1,
            ts: '2',
            text: 'Traceback (most recent call last):'
          }
        ])
      )
    );
    const rows = () => [...host.querySelectorAll('.jp-Ranktable-logLine')];
    expect(
      rows().map(r => r.querySelector('.jp-Ranktable-logMeta')!.textContent)
    ).toEqual(['[0 bert-0]', '[1 bert-1]']);
    expect(
      rows().map(r => r.classList.contains('jp-Ranktable-logError'))
    ).toEqual([false, true]);
    act(() => logs.setFilter({ search: 'loss' }));
    expect(host.querySelector('mark')!.textContent).toBe('loss');
    const nodeRank = host.querySelector(
      'input[placeholder="e.g. 0-1"]'
    ) as HTMLInputElement;
    expect(nodeRank).not.toBeNull();
    act(() => logs.setNodeRanks('1-'));
    expect(nodeRank.getAttribute('aria-invalid')).toBe('true');
    expect(host.querySelector('.jp-Ranktable-fieldError')).not.toBeNull();
    act(() => {
      logs.setFilter({ search: '' });
      logs.setNodeRanks('1');
    });
    expect(rows().map(r => r.getAttribute('data-pod'))).toEqual(['bert-1']);
    expect(
      host.querySelector('.jp-Ranktable-logStatus')!.textContent
    ).toContain('1 of 2 lines');
    logs.dispose();
  });
});
