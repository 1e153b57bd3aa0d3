import { RanktableAPIError, get } from '../api/client';
import type { components } from '../api/openapi';
import { Model } from '../ui/model';

/** What this user may do (`GET /ranktable/permissions`, generated from openapi.yaml). */
export type IPermissions = components['schemas']['Permissions'];

/** A job as far as rights go: where it runs and who owns it (a JobSummary has both). */
export interface IOwnedJob {
  namespace: string;
  owner?: string;
}

export type Action = 'submit' | 'stop' | 'resubmit';

/**
 * The user's rights, read once from the server (Jupyter's authorizer and the pool's RBAC, which the
 * server asks with SelfSubjectAccessReview): the views disable what the user may not do and say why.
 * Unknown rights (the request failed for another reason) disable nothing: the server still refuses.
 */
export class PermissionsModel extends Model {
  permissions: IPermissions | null = null;
  /** Set when the user may not even read: the one message the panel shows instead of its lists. */
  noRead = '';
  private _loading: Promise<void> | null = null;

  load(): Promise<void> {
    if (!this._loading) {
      this._loading = this._fetch();
    }
    return this._loading;
  }

  /** '' when `action` (on `job`) is allowed or unknown, else why not, in one sentence. */
  whyNot(action: Action, job?: IOwnedJob): string {
    const p = this.permissions;
    if (this.noRead) {
      return this.noRead;
    }
    if (!p) {
      return '';
    }
    if (p.jupyter && !p.jupyter.write) {
      return 'Read-only: your access to this Jupyter server does not include write (ask its owner or the Hub admin).';
    }
    const allowed = p.allowed ?? {};
    if (action === 'submit') {
      return allowed.submit === false
        ? `Your Kubernetes RBAC does not allow creating Volcano jobs in namespace ${p.namespace}.`
        : '';
    }
    if (job?.owner && p.owner && job.owner !== p.owner) {
      if (allowed.stop_others === true && job.namespace === p.namespace) {
        return '';
      }
      return `This job belongs to ${job.owner}: only they (or someone granted stop-others) may ${action} it.`;
    }
    if (job && job.namespace === p.namespace && allowed.stop === false) {
      return `Your Kubernetes RBAC does not allow deleting Volcano jobs in namespace ${p.namespace}.`;
    }
    return '';
  }

  /** '' when the user may `write` / `execute` on this Jupyter server (or it is unknown), else why not. */
  whyNotHere(action: 'write' | 'execute'): string {
    if (this.noRead) {
      return this.noRead;
    }
    const jupyter = this.permissions?.jupyter;
    if (jupyter && !jupyter[action]) {
      return action === 'write'
        ? 'Read-only: your access to this Jupyter server does not include write (ask its owner or the Hub admin).'
        : 'Your access to this Jupyter server does not include execute (remote commands and tunnels).';
    }
    return '';
  }

  private async _fetch(): Promise<void> {
    try {
      this.permissions = await get('/ranktable/permissions');
    } catch (error) {
      if (error instanceof RanktableAPIError && error.status === 403) {
        this.noRead =
          'You may not read Ranktable on this Jupyter server: your access does not include read ' +
          '(ask its owner or the JupyterHub admin for custom:jupyter_server:read).';
      } else {
        this._loading = null; // another reason (the server starting): asked again next time
      }
    }
    this.emit();
  }
}
