import { Dialog, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';

import { IJobRow, IRunRef } from './model';
import { resubmitQuestion, stopQuestion } from './questions';

async function ask(
  trans: TranslationBundle,
  title: string,
  body: string,
  label: string
): Promise<boolean> {
  const answer = await showDialog({
    title,
    body,
    buttons: [Dialog.cancelButton(), Dialog.warnButton({ label })]
  });
  return answer.button.accept;
}

/** Ask once before stopping `run`. */
export function confirmStop(
  trans: TranslationBundle,
  run: IRunRef
): Promise<boolean> {
  return ask(
    trans,
    trans.__('Stop job'),
    stopQuestion(trans, run),
    trans.__('Stop')
  );
}

/** Ask once before a resubmit that stops a live run; true at once when it stops nothing. */
export async function confirmResubmit(
  trans: TranslationBundle,
  run: IRunRef,
  current: IJobRow | undefined
): Promise<boolean> {
  const question = resubmitQuestion(trans, run, current);
  return (
    !question ||
    ask(
      trans,
      trans.__('Resubmit job'),
      question,
      trans.__('Stop and resubmit')
    )
  );
}
