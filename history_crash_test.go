package ringwal_test

const historyCrashDirEnv = "RINGWAL_HISTORY_CRASH_DIR"
