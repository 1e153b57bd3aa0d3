import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** An error the server described as `{message, reason, field}`. */
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

/** Call `/ranktable/<endPoint>` with the server's token and XSRF headers; JSON in and out. */
export async function requestAPI<T>(
  endPoint: string,
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  const url = URLExt.join(settings.baseUrl, 'ranktable', endPoint);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ServerConnection.NetworkError(error as TypeError);
  }
  const text = await response.text();
  let data: any = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { message: text };
    }
  }
  if (!response.ok) {
    throw new RanktableAPIError(
      data?.message ?? response.statusText,
      response.status,
      data?.reason ?? '',
      data?.field ?? null,
      data?.fix ?? null
    );
  }
  return data as T;
}

export function postJSON<T>(endPoint: string, body: unknown): Promise<T> {
  return requestAPI<T>(endPoint, {
    method: 'POST',
    body: JSON.stringify(body)
  });
}
