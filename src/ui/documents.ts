import { JupyterFrontEnd } from '@jupyterlab/application';
import { WidgetTracker } from '@jupyterlab/apputils';
import { ABCWidgetFactory, DocumentWidget } from '@jupyterlab/docregistry';

/**
 * Register a document widget factory and track its widgets under `namespace`, saved again when a file is
 * renamed, so a reload reopens them (the layout viewer and the job spec form use it).
 */
export function registerTrackedFactory<T extends DocumentWidget>(
  app: JupyterFrontEnd,
  factory: ABCWidgetFactory<T>,
  namespace: string
): WidgetTracker<T> {
  app.docRegistry.addWidgetFactory(factory);
  const tracker = new WidgetTracker<T>({ namespace });
  factory.widgetCreated.connect((_, widget) => {
    widget.context.pathChanged.connect(() => void tracker.save(widget));
    void tracker.add(widget);
  });
  return tracker;
}
