/**
 * The REST calls as jest stand-ins, one set for every spec:
 * `jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));`
 * each test then says what they answer (`(requestAPI as jest.Mock).mockResolvedValue(...)`).
 */
export { RanktableAPIError } from '../api/errors';
export const requestAPI = jest.fn();
export const requestChanged = jest.fn();
export const postJSON = jest.fn();
