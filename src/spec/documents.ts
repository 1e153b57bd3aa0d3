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
import { registerTrackedFactory } from '../ui/documents';

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
  return registerTrackedFactory(app, factory, 'ranktable-spec');
}
