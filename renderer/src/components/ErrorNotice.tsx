import type { FileError } from '../../../shared/bridge.js';
import type { ReactNode } from 'react';
import { detailLabel } from '../bridge/errors.js';
import { Icon } from './Icon.js';

/**
 * A failure in plain language first, the detail underneath for IT ("Server said:" only for the server's own words).
 * Announced at once (role="alert") unless `announce` is false: a standing state whose changes the
 * sync announcer sums up (a folder's failed files), which would otherwise be read out at every count.
 */
export function ErrorNotice({ error, title, action, children, announce = true }: { error: Pick<FileError, 'message' | 'detail'> & { code?: FileError['code'] }; title?: string; action?: ReactNode; children?: ReactNode; announce?: boolean }) {
  const label = error.detail ? detailLabel(error) : null;
  return (
    <div className="notice notice-danger" role={announce ? 'alert' : undefined}>
      <Icon name="alert" size={18} />
      <div className="notice-body">
        {title ? <strong>{title}</strong> : null}
        {error.message ? <p className="notice-message">{error.message}</p> : null}
        {children}
        {label ? (
          <p className="notice-detail">
            <span className="notice-detail-label">{label}</span> {error.detail}
          </p>
        ) : null}
      </div>
      {action ? <div className="notice-action">{action}</div> : null}
    </div>
  );
}

/** A note, read out politely when it appears or changes — unless `announce` is false (see ErrorNotice). */
export function InfoNotice({ children, tone = 'info', announce = true }: { children: ReactNode; tone?: 'info' | 'warning' | 'success'; announce?: boolean }) {
  return (
    <div className={`notice notice-${tone}`} role={announce ? 'status' : undefined}>
      <Icon name={tone === 'success' ? 'checkCircle' : tone === 'warning' ? 'alert' : 'info'} size={18} />
      <div className="notice-body">{children}</div>
    </div>
  );
}
