/** The socket's file name in the state directory. */
export declare const SOCKET_NAME: string;
/** Where the socket is: `{ path }`, or `{ path, cwd }` when the path must be used relative to `cwd`. */
export declare function socketAddress(dir: string): { path: string; cwd?: string };
/** Runs a synchronous bind or connect with the socket's path (relative, from inside `dir`, when the absolute one is too long). */
export declare function atSocket<T>(dir: string, fn: (path: string) => T): T;
/** Why the state directory cannot be trusted to hold this user's recorder, or null. */
export declare function untrustedDir(dir: string): string | null;
