"""Network science that more than one NatureGym family (or suite) uses: the
degree-corrected stochastic block model the relational families draw their networks
from (`sbm`). Like `physics/`, the shared layer beside it, it imports nothing of the
package, so any family or suite may use it without importing another."""
