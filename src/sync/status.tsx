import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget, UseSignal } from '@jupyterlab/ui-components';

import { SyncStatusModel } from './model';
import { syncStatusText } from './statustext';

/** The Notebook-instance sync state in JupyterLab's status bar; a click opens the Sync section. */
export function createSyncStatusItem(
  model: SyncStatusModel,
  trans: TranslationBundle,
  onOpen: () => void
): ReactWidget {
  const widget = ReactWidget.create(
    <UseSignal signal={model.changed}>
      {() => {
        const { text, title } = syncStatusText(model, trans);
        const state = model.channelError ? 'error' : model.summary.state;
        return (
          <button
            type="button"
            className="jp-Ranktable-syncStatus"
            data-state={state}
            title={title}
            aria-label={text}
            onClick={onOpen}
          >
            <span className="jp-Ranktable-syncStatus-dot" aria-hidden="true" />
            <span className="jp-Ranktable-syncStatus-text">{text}</span>
          </button>
        );
      }}
    </UseSignal>
  );
  widget.id = 'jp-Ranktable-syncStatus';
  widget.addClass('jp-Ranktable-syncStatusItem');
  return widget;
}
