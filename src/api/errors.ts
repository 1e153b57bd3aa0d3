import { ServerConnection } from '@jupyterlab/services';

/** An error the server described as `{message, reason, field, fix}` (`components/schemas/Error`). */
export class RanktableAPIError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly reason: string,
    readonly field: string | null,
    readonly fix: string | null = null
  ) {
    super(message);
  }
}

/** What a request that got no answer at all says (the server down or restarting), not "Failed to fetch". */
export const UNREACHABLE =
  'Cannot reach the Jupyter server (it may be restarting); trying again.';

/** The message to show for a failed request. */
export function messageOf(error: unknown): string {
  if (error instanceof ServerConnection.NetworkError) {
    return UNREACHABLE;
  }
  return error instanceof Error ? error.message : String(error);
}
