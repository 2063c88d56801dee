// Placeholder until the HTTPServer layer lands; replace this file.
