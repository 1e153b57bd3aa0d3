import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { RanktableAPIError } from './errors';

export { RanktableAPIError };

/** Call `/ranktable/<endPoint>` with the server's token and XSRF headers; JSON in and out. */
export async function requestAPI<T>(
  endPoint: string,
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  return parseReply<T>(await send(endPoint, init, settings));
}

/**
 * GET `/ranktable/<endPoint>` again: `null` while the server says it is unchanged since `etag` (304), else
 * the body with its new ETag ('' when the server gave none).
 */
export async function requestChanged<T>(
  endPoint: string,
  etag: string,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<{ data: T; etag: string } | null> {
  const response = await send(
    endPoint,
    { cache: 'no-store', headers: etag ? { 'If-None-Match': etag } : {} },
    settings
  );
  if (response.status === 304) {
    return null;
  }
  const data = await parseReply<T>(response);
  return { data, etag: response.headers.get('ETag') ?? '' };
}

async function send(
  endPoint: string,
  init: RequestInit,
  settings: ServerConnection.ISettings
): Promise<Response> {
  const url = URLExt.join(settings.baseUrl, 'ranktable', endPoint);
  try {
    return await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ServerConnection.NetworkError(error as TypeError);
  }
}

async function parseReply<T>(response: Response): Promise<T> {
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
