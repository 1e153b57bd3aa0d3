import { RanktableAPIError, post } from '../api/client';
import type { components, paths } from '../api/openapi';

/** POST /ranktable/profiles/NAME/test's answer (`components/schemas/TestResult` in openapi.yaml). */
export type ITestResult = components['schemas']['TestResult'];

/** POST /ranktable/profiles/NAME/test's body (accept or replace a host key, a key passphrase). */
export type ITestRequest = NonNullable<
  paths['/ranktable/profiles/{name}/test']['post']['requestBody']
>['content']['application/json'];

/** A fingerprint as typed or pasted: surrounding blanks and a leading key type ("ED25519 SHA256:…") dropped. */
export function normalizeFingerprint(text: string): string {
  const words = text.trim().split(/\s+/);
  return words.find(w => w.startsWith('SHA256:')) ?? words.join(' ');
}

/** True once the typed text is exactly the fingerprint the server presents (base64 is case-sensitive). */
export function fingerprintMatches(typed: string, presented: string): boolean {
  return !!presented && normalizeFingerprint(typed) === presented;
}

/**
 * The deliberate "the instance was recreated: trust the new key" step: refused here unless the user typed
 * or pasted the presented fingerprint, and the server replaces the recorded key only if the instance
 * still presents exactly that key. Never called without the user's input.
 */
export async function trustNewHostKey(
  profile: string,
  typed: string,
  changed: Pick<ITestResult, 'presented'>
): Promise<ITestResult> {
  const presented = changed.presented ?? '';
  if (!fingerprintMatches(typed, presented)) {
    throw new RanktableAPIError(
      'replace_host_key: the fingerprint typed does not match the one the instance presents',
      400,
      'invalid',
      'replace_host_key'
    );
  }
  const body: ITestRequest = { replace_host_key: normalizeFingerprint(typed) };
  return post(
    '/ranktable/profiles/{name}/test',
    { path: { name: profile } },
    body
  );
}
