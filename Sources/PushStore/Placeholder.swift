// Placeholder until the PushStore layer lands; replace this file.
