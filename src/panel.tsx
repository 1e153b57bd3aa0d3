import * as React from 'react';
import { ReactWidget } from '@jupyterlab/ui-components';
import { TranslationBundle } from '@jupyterlab/translation';

import { RanktableModel } from './model';
import { ConnectionsSection } from './components/connections';
import { SyncSection } from './components/sync';
import { ComposeSection } from './components/compose';
import { LayoutSection } from './components/layout';
import { JobsSection } from './components/jobs';
import { LogsSection } from './components/logs';
import { KernelsSection } from './components/kernels';

/** The "Ranktable" sidebar: one scrolling column of collapsible sections. */
export class RanktablePanel extends ReactWidget {
  constructor(
    readonly model: RanktableModel,
    private _trans: TranslationBundle,
    private _openNotebook: (kernelName: string) => Promise<void>
  ) {
    super();
    this.addClass('jp-Ranktable-panel');
  }

  protected render(): JSX.Element {
    const props = { model: this.model, trans: this._trans };
    return (
      <div className="jp-Ranktable-scroll">
        <header className="jp-Ranktable-header">
          <h2>{this._trans.__('Ranktable')}</h2>
        </header>
        <ConnectionsSection {...props} />
        <SyncSection {...props} />
        <ComposeSection {...props} />
        <LayoutSection {...props} />
        <JobsSection {...props} />
        <LogsSection {...props} />
        <KernelsSection {...props} openNotebook={this._openNotebook} />
      </div>
    );
  }
}
