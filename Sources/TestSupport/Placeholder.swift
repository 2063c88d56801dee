// Placeholder until the TestSupport layer lands; replace this file.
