import * as React from 'react';
import {
  ABCWidgetFactory,
  DocumentRegistry,
  DocumentWidget
} from '@jupyterlab/docregistry';
import { TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget } from '@jupyterlab/ui-components';

import { ErrorLine, errorText } from '../ui/common';
import { ILayoutResult, LayoutResult, TopologyInput } from './figure';
import { rankLayoutIcon } from '../ui/icon';
import { planLayout } from './model';

export const LAYOUT_FACTORY = 'Rank layout';

/** Ask for a topology file in the Jupyter contents (its path, or null when cancelled). */
export type TopologyPicker = (near: string) => Promise<string | null>;

/** "Open With → Rank layout" on a rank-table JSON: its layout on the cluster's topology or a file's. */
function LayoutDoc(props: {
  context: DocumentRegistry.CodeContext;
  trans: TranslationBundle;
  pickTopology?: TopologyPicker;
}): JSX.Element {
  const { context, trans, pickTopology } = props;
  const [topology, setTopology] = React.useState('');
  const [result, setResult] = React.useState<ILayoutResult | null>(null);
  const [error, setError] = React.useState('');
  const [busy, setBusy] = React.useState(false);
  const plan = async (topologyPath = topology) => {
    setBusy(true);
    setError('');
    try {
      setResult(
        await planLayout(context.model.sharedModel.getSource(), topologyPath)
      );
    } catch (e) {
      setResult(null);
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  React.useEffect(() => {
    void context.ready.then(() => plan());
  }, [context]);
  const browse = async () => {
    const dir = context.path.includes('/')
      ? context.path.slice(0, context.path.lastIndexOf('/'))
      : '';
    const picked = await pickTopology?.(dir);
    if (picked) {
      setTopology(picked);
      await plan(picked);
    }
  };
  return (
    <div className="jp-Ranktable-layoutDoc">
      <div className="jp-Ranktable-toolbar">
        <TopologyInput
          trans={trans}
          value={topology}
          placeholder="topology.yaml"
          onChange={setTopology}
        />
        {pickTopology && (
          <button
            className="jp-mod-styled"
            disabled={busy}
            title={trans.__('Pick the topology file in the Jupyter contents')}
            onClick={() => void browse()}
          >
            {trans.__('Browse…')}
          </button>
        )}
        <button
          className="jp-mod-styled jp-mod-accept"
          disabled={busy}
          onClick={() => void plan()}
        >
          {busy ? trans.__('Planning…') : trans.__('Plan')}
        </button>
      </div>
      <ErrorLine error={error} />
      <LayoutResult result={result} trans={trans} />
    </div>
  );
}

export class LayoutDocFactory extends ABCWidgetFactory<
  DocumentWidget<ReactWidget>,
  DocumentRegistry.ICodeModel
> {
  constructor(
    options: DocumentRegistry.IWidgetFactoryOptions<
      DocumentWidget<ReactWidget>
    >,
    private _trans: TranslationBundle,
    private _pickTopology?: TopologyPicker
  ) {
    super(options);
  }

  protected createNewWidget(
    context: DocumentRegistry.CodeContext
  ): DocumentWidget<ReactWidget> {
    const content = ReactWidget.create(
      <LayoutDoc
        context={context}
        trans={this._trans}
        pickTopology={this._pickTopology}
      />
    );
    content.addClass('jp-Ranktable-layoutDocWidget');
    const widget = new DocumentWidget({ content, context });
    widget.title.icon = rankLayoutIcon;
    return widget;
  }
}
