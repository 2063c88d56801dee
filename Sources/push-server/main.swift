import Foundation
import PushServer

// Everything lives in PushServer.CLI; this file only hands over the arguments and the exit status.
exit(await CLI.run(Array(CommandLine.arguments.dropFirst())))
