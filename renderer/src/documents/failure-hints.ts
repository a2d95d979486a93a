/** The hints live in shared/ so the sync CLI says the same as the app. */
export { failureHint } from '../../../shared/failure-hints.js';
