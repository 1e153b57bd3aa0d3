import * as React from 'react';
import { ISignal } from '@lumino/signaling';

import { useSignal } from './usesignal';

/** Re-render on a model's `changed`, and refresh it now and every `refreshMs` while mounted. */
export function useListModel(
  model: { changed: ISignal<any, void>; refresh: () => Promise<void> },
  refreshMs: number
): void {
  useSignal(model.changed);
  React.useEffect(() => {
    void model.refresh();
    const timer = window.setInterval(() => void model.refresh(), refreshMs);
    return () => window.clearInterval(timer);
  }, [model, refreshMs]);
}
