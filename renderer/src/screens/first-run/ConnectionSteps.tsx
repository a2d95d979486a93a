import type { ConnectionTestResult } from '../../../../shared/bridge.js';
import { detailLabel } from '../../bridge/errors.js';
import { Icon } from '../../components/Icon.js';

type Step = NonNullable<ConnectionTestResult['step']>;

const STEPS: Array<{ step: Step; label: string }> = [
  { step: 'reach', label: 'Reach the server' },
  { step: 'authenticate', label: 'Sign in with the client ID and secret' },
  { step: 'scope', label: 'Check the client’s permissions' },
  { step: 'organization', label: 'Check the organization' },
];

/** Walks the test's steps in order so the user sees exactly which one failed and why. */
export function ConnectionSteps({ result }: { result: ConnectionTestResult }) {
  const failedIndex = result.ok ? STEPS.length : STEPS.findIndex((entry) => entry.step === result.step);
  return (
    <div className={result.ok ? 'connection-steps ok' : 'connection-steps failed'} role="status" aria-live="polite" data-testid="connection-result">
      <ol>
        {STEPS.map((entry, index) => {
          const outcome = failedIndex < 0 ? 'failed' : index < failedIndex ? 'passed' : index === failedIndex ? 'failed' : 'skipped';
          return (
            <li key={entry.step} className={`connection-step ${outcome}`}>
              <span className="connection-step-icon" aria-hidden="true">
                {outcome === 'passed' ? <Icon name="check" size={14} /> : outcome === 'failed' ? <Icon name="close" size={14} /> : null}
              </span>
              <span className="connection-step-label">
                {entry.label}
                <span className="visually-hidden">: {outcome === 'passed' ? 'passed' : outcome === 'failed' ? 'failed' : 'not checked'}</span>
              </span>
              {outcome === 'failed' && result.error ? (
                <span className="connection-step-error">
                  <span className="connection-error-message">{result.error.message}</span>
                  {result.error.detail ? (
                    <span className="connection-error-detail">
                      {detailLabel(result.error)} {result.error.detail}
                    </span>
                  ) : null}
                </span>
              ) : null}
            </li>
          );
        })}
      </ol>
      {result.ok ? (
        <p className="connection-ok">
          <Icon name="checkCircle" size={18} /> Connected{result.organizationName ? ` to ${result.organizationName}` : ''}. Everything is in order.
        </p>
      ) : null}
    </div>
  );
}
