// namespaces.h — one namespace per program: pcm::common (this folder, shared by all of them, with
// pcm::proto and pcm::ops for the wire), pcm::lib (libpcm), pcm::daemon (pcmd), pcm::ctl (pcmctl)
// and pcm::relay (pcm-relay). Each program's namespace sees common's names unqualified; nothing
// sees another program's. Every header of common/ (error.h too) includes this one, so that a
// program sees common's names whichever of them it includes first.
#pragma once

namespace pcm::common {}
namespace pcm::common {  // libpcm's until its rename
using namespace pcm::common;
}
namespace pcm::lib {
using namespace pcm::common;
}
namespace pcm::daemon {
using namespace pcm::common;
}
namespace pcm::ctl {
using namespace pcm::common;
}
namespace pcm::relay {
using namespace pcm::common;
}
