import { JupyterFrontEnd } from '@jupyterlab/application';
import { WidgetTracker } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { DocumentWidget } from '@jupyterlab/docregistry';
import { FileDialog } from '@jupyterlab/filebrowser';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget } from '@jupyterlab/ui-components';

import { LAYOUT_FACTORY, LayoutDocFactory } from './view';
import { registerTrackedFactory } from '../ui/documents';

/** Rank layout viewer: "Open With → Rank layout" on a rank-table JSON. */
export function registerLayoutDocuments(
  app: JupyterFrontEnd,
  trans: TranslationBundle,
  translator: ITranslator,
  docManager: IDocumentManager | null
): WidgetTracker<DocumentWidget<ReactWidget>> {
  // the topology file picker of the viewer (JupyterLab's file dialog over the Jupyter contents)
  const pickTopology = async (near: string): Promise<string | null> => {
    if (!docManager) {
      return null;
    }
    const picked = await FileDialog.getOpenFiles({
      manager: docManager,
      title: trans.__('Topology file for the Rank layout viewer'),
      label: trans.__(
        'A switch topology in any format `ranktable plan` reads (detected from the content)'
      ),
      defaultPath: near,
      translator
    });
    const file = (picked.value ?? []).find(i => i.type !== 'directory');
    return picked.button.accept && file ? file.path : null;
  };
  const factory = new LayoutDocFactory(
    {
      name: LAYOUT_FACTORY,
      label: trans.__('Rank layout'),
      modelName: 'text',
      fileTypes: ['json'],
      translator
    },
    trans,
    docManager ? pickTopology : undefined
  );
  return registerTrackedFactory(app, factory, 'ranktable-layout');
}
