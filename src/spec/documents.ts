import { JupyterFrontEnd } from '@jupyterlab/application';
import { WidgetTracker } from '@jupyterlab/apputils';
import { DocumentWidget } from '@jupyterlab/docregistry';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';

import { IRunRef, JobsModel } from '../jobs/model';
import { jobSpecIcon } from '../ui/icon';
import { SPEC_FILE_EXTENSION } from './specfile';
import {
  SPEC_FACTORY,
  SPEC_FILE_TYPE,
  SpecEditor,
  SpecEditorFactory
} from './view';

/** Job spec files (*.rtjob.yaml): a form view; "Open With → Editor" edits the same text. */
export function registerSpecDocuments(
  app: JupyterFrontEnd,
  jobs: JobsModel,
  trans: TranslationBundle,
  translator: ITranslator,
  openRun: (run: IRunRef) => void
): WidgetTracker<DocumentWidget<SpecEditor>> {
  app.docRegistry.addFileType({
    name: SPEC_FILE_TYPE,
    displayName: trans.__('Ranktable job spec'),
    extensions: [SPEC_FILE_EXTENSION],
    mimeTypes: ['text/x-yaml'],
    contentType: 'file',
    fileFormat: 'text',
    icon: jobSpecIcon
  });
  const factory = new SpecEditorFactory(
    {
      name: SPEC_FACTORY,
      label: trans.__('Ranktable job'),
      modelName: 'text',
      fileTypes: [SPEC_FILE_TYPE],
      defaultFor: [SPEC_FILE_TYPE],
      translator
    },
    jobs,
    trans,
    openRun
  );
  app.docRegistry.addWidgetFactory(factory);
  const specs = new WidgetTracker<DocumentWidget<SpecEditor>>({
    namespace: 'ranktable-spec'
  });
  factory.widgetCreated.connect((_, widget) => {
    widget.context.pathChanged.connect(() => void specs.save(widget));
    void specs.add(widget);
  });
  return specs;
}
