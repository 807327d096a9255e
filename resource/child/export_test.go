package child

import "github.com/operatorkit/operatorkit/resource/crud"

// OwnerIndexSynced reports whether the child resource r (as New returns
// it) indexes its children by owner and the index has seen the informer's
// initial list: from then on it finds an owner's children in the index
// instead of scanning the cache.
func OwnerIndexSynced(r *crud.Resource) bool {
	type indexed interface{ ownerIndexSynced() bool }
	x, ok := r.Ops().(indexed)
	return ok && x.ownerIndexSynced()
}

func (o *ops[O, C]) ownerIndexSynced() bool { return o.owners != nil && o.owners.synced() }
