/** The hints live in shared/ so the sync CLI says the same as the app. */
export { canRetry, failureHint, failureMessage, isNoLongerOnServer } from '../../../shared/failure-hints.js';
